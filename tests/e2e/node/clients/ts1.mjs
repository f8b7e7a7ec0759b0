// TypeScript SDK 1.x (@modelcontextprotocol/sdk, pinned in ../package.json): connects over
// $TARGET ({transport: stdio|http|sse, command, args, env, cwd | url}), runs $SCENARIO
// (scenarios.mjs) and prints one JSON line. Handshake era only (1.x has no version negotiation).
// With $ELICIT set it declares elicitation and answers forms with it (scenarios.mjs).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { answerForm, elicitAnswer, main, target } from './scenarios.mjs';

const TIMEOUT = { timeout: 30000 };

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
  const elicits = elicitAnswer() !== null;
  const client = new Client(
    { name: 'bernstein-e2e-ts1', version: '1.0.0' },
    elicits ? { capabilities: { elicitation: {} } } : {},
  );
  if (elicits) client.setRequestHandler(ElicitRequestSchema, (request) => answerForm(request.params));
  client.onerror = (e) => errors.push(String(e?.message ?? e));
  const transport = transportFor(t);
  let version = null;
  const setVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    version = v;
    setVersion?.(v);
  };
  await client.connect(transport, TIMEOUT);
  return {
    client,
    call: (name, args, opts = {}) => client.callTool({ name, arguments: args }, CallToolResultSchema, { ...TIMEOUT, ...opts }),
    info: () => ({ sdk: '1.x', protocolVersion: version, server: client.getServerVersion() }),
    close: () => client.close(),
  };
});
