// webpack 5 with its defaults (what `npx webpack` does with this config; the CLI is a separate
// package the test does not need): production mode, publicPath 'auto'. OUT = output folder.
import webpack from 'webpack';

const config = {
  mode: 'production',
  context: import.meta.dirname,
  entry: './app/main.js',
  output: { path: process.env.OUT, filename: 'main.js', clean: true },
};
webpack(config, (err, stats) => {
  if (err || stats.hasErrors()) {
    console.error(err || stats.toString('errors-only'));
    process.exit(1);
  }
  if (stats.hasWarnings()) console.log(stats.toString('errors-warnings'));
});
