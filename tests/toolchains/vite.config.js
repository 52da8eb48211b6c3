// Vite with its defaults; served under /toolchains/vite/ (OUT = output folder).
export default {
  root: 'app',
  base: '/toolchains/vite/',
  logLevel: 'warn',
  build: { outDir: process.env.OUT, emptyOutDir: true },
};
