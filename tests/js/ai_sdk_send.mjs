// Sends histories (a JSON list of ModelMessage lists, on stdin) through the AI SDK's own prompt path:
// its message schema, then generateText with a scripted model. Prints, per history, the prompt the
// model received or the SDK's error.
import { generateText, modelMessageSchema } from "ai";
import { MockLanguageModelV4 } from "ai/test";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const messages of JSON.parse(input)) {
  const invalid = messages.findIndex((m) => !modelMessageSchema.safeParse(m).success);
  if (invalid >= 0) {
    const error = modelMessageSchema.safeParse(messages[invalid]).error.message;
    results.push({ ok: false, error: `message ${invalid}: ${error.slice(0, 300)}` });
    continue;
  }
  let prompt = null;
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      prompt = options.prompt;
      return {
        content: [{ type: "text", text: "ok" }],
        finishReason: { unified: "stop", raw: "stop" },
        usage: { inputTokens: { total: 1 }, outputTokens: { total: 1 } },
        warnings: [],
      };
    },
  });
  // The SDK takes a system prompt as its instructions, not as a message.
  const instructions = messages.filter((m) => m.role === "system").map((m) => m.content).join("\n");
  const rest = messages.filter((m) => m.role !== "system");
  try {
    await generateText({ model, messages: rest, ...(instructions ? { instructions } : {}) });
    results.push({ ok: true, prompt });
  } catch (e) {
    results.push({ ok: false, error: `${e.name}: ${e.message}`.slice(0, 400) });
  }
}
process.stdout.write(JSON.stringify(results));
