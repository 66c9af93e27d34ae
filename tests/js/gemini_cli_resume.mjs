// The history Gemini CLI resumes from each session file named on the command line, with its own loader
// (loadConversationRecord) and converter (convertSessionToClientHistory): a JSON object of file to turns.
import { loadConversationRecord } from "@google/gemini-cli-core/dist/src/services/chatRecordingService.js";
import { convertSessionToClientHistory } from "@google/gemini-cli-core/dist/src/utils/sessionUtils.js";

const out = {};
for (const file of process.argv.slice(2)) {
  const record = await loadConversationRecord(file);
  out[file] = record ? convertSessionToClientHistory(record.messages).map((turn) => turn.content) : null;
}
process.stdout.write(JSON.stringify(out));
