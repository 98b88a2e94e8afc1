// Screenshot of the first page of a Chromium started with --remote-debugging-port,
// through the DevTools protocol (node 20: run with --experimental-websocket).
//   node --experimental-websocket scripts/vscode/screenshot.js PORT OUT.png
"use strict";
const fs = require("fs");

async function main() {
  const [port, out] = process.argv.slice(2);
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const page = targets.find((t) => t.type === "page");
  if (!page) throw new Error("no page target");
  const ws = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const data = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no screenshot within 20 s")), 20000);
    ws.onmessage = (event) => {
      const msg = JSON.parse(event.data);
      if (msg.id === 1) {
        clearTimeout(timer);
        msg.error ? reject(new Error(msg.error.message)) : resolve(msg.result.data);
      }
    };
    ws.send(JSON.stringify({ id: 1, method: "Page.captureScreenshot", params: { format: "png" } }));
  });
  fs.writeFileSync(out, Buffer.from(data, "base64"));
  ws.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`screenshot failed: ${err.message}`);
    process.exit(1);
  },
);
