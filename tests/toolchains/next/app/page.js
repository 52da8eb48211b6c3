// A server component (prerendered at build time) that imports the package: importing llm-rum
// on the server touches no global and loads no wasm.
import { VERSION } from 'llm-rum';
import Chat from './chat.js';

export default function Page() {
  return (
    <main>
      <p id="server-version">{VERSION}</p>
      <Chat />
    </main>
  );
}
