// TypeScript SDK 2.x (@modelcontextprotocol/client, pinned in ../package.json): connects over
// $TARGET ({transport: stdio|http|sse, command, args, env, cwd | url}) in era $ERA (legacy: plain
// initialize; modern: pinned to 2026-07-28; auto: server/discover probe with fallback), runs
// $SCENARIO (scenarios.mjs) and prints one JSON line. With $ELICIT set it declares elicitation
// and answers forms with it (scenarios.mjs).
import { Client, StreamableHTTPClientTransport, SSEClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { answerForm, elicitAnswer, main, target } from './scenarios.mjs';

const TIMEOUT = { timeout: 30000 };
const MODES = { legacy: 'legacy', auto: 'auto', modern: { pin: '2026-07-28' } };

function transportFor(t) {
  if (t.transport === 'stdio') {
    return new StdioClientTransport({ command: t.command, args: t.args, env: t.env, cwd: t.cwd, stderr: 'inherit' });
  }
  // `headers` (optional): sent with every request (an OAuth access token's Authorization).
  if (t.transport === 'http') {
    return new StreamableHTTPClientTransport(new URL(t.url), { requestInit: { headers: t.headers ?? {} } });
  }
  if (t.transport === 'sse') return new SSEClientTransport(new URL(t.url));
  throw new Error(`unknown transport ${t.transport}`);
}

await main(async (errors) => {
  const t = target();
  const era = process.env.ERA;
  if (!(era in MODES)) throw new Error(`unknown era ${era}`);
  const elicits = elicitAnswer() !== null;
  const client = new Client(
    { name: 'bernstein-e2e-ts2', version: '1.0.0' },
    { versionNegotiation: { mode: MODES[era] }, ...(elicits ? { capabilities: { elicitation: {} } } : {}) },
  );
  // In 2026-07-28 the SDK's own loop answers an InputRequiredResult through this handler.
  if (elicits) client.setRequestHandler('elicitation/create', (request) => answerForm(request.params));
  client.onerror = (e) => errors.push(String(e?.message ?? e));
  await client.connect(transportFor(t), TIMEOUT);
  return {
    client,
    call: (name, args, opts = {}) => client.callTool({ name, arguments: args }, { ...TIMEOUT, ...opts }),
    info: () => ({
      sdk: '2.x',
      era: client.getProtocolEra?.() ?? null,
      protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null,
      server: client.getServerVersion(),
    }),
    close: () => client.close(),
  };
});
