// What pi resumes from each session file named on the command line, with its own session manager
// (SessionManager.open, buildSessionContext) and the conversion it sends through (convertToLlm): a JSON
// object of file to the messages pi would send. Imported by file: the package exports its index only,
// which loads the terminal UI too.
const core = new URL("./node_modules/@mariozechner/pi-coding-agent/dist/core/", import.meta.url);
const { SessionManager } = await import(new URL("session-manager.js", core));
const { convertToLlm } = await import(new URL("messages.js", core));

const out = {};
for (const file of process.argv.slice(2)) {
  const session = SessionManager.open(file, process.env.PI_SESSION_DIR);
  out[file] = convertToLlm(session.buildSessionContext().messages);
}
process.stdout.write(JSON.stringify(out));
