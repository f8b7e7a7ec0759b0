// TypeScript SDK 2.x (@modelcontextprotocol/client) as a host that answers the server's
// questions: pinned to 2026-07-28, it declares $CAPS (JSON ClientCapabilities) and answers every
// elicitation with $ANSWER (JSON ElicitResult) and every sampling request with a fixed message,
// through its own multi round-trip loop (InputRequiredResult → handler → retry with
// inputResponses and requestState). Calls each tool of $TOOLS against $URL and prints one JSON
// line: each call's content or error, and how many questions each handler answered.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const TIMEOUT = { timeout: 30000 };
const caps = JSON.parse(process.env.CAPS);
const answer = JSON.parse(process.env.ANSWER ?? '{"action":"cancel"}');
const asked = { elicitation: 0, sampling: 0 };
const client = new Client(
  { name: 'bernstein-e2e-ts2-input', version: '1.0.0' },
  { capabilities: caps, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
if (caps.elicitation) {
  client.setRequestHandler('elicitation/create', async () => {
    asked.elicitation++;
    return answer;
  });
}
if (caps.sampling) {
  client.setRequestHandler('sampling/createMessage', async () => {
    asked.sampling++;
    return { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'e2e-model' };
  });
}
const report = { calls: {}, asked };
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.URL)), TIMEOUT);
  report.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
  for (const name of JSON.parse(process.env.TOOLS)) {
    try {
      const r = await client.callTool({ name, arguments: {} }, TIMEOUT);
      report.calls[name] = { content: r.content, isError: r.isError ?? false };
    } catch (e) {
      report.calls[name] = { error: { code: e?.code ?? null, message: String(e?.message ?? e) } };
    }
  }
  await client.close();
} catch (e) {
  report.fatal = String(e?.stack ?? e);
}
console.log(JSON.stringify(report));
