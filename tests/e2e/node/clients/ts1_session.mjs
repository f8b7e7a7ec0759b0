// TypeScript SDK 1.x (@modelcontextprotocol/sdk) as a handshake-era host over streamable HTTP
// against $URL (the conformance fixture server): declares elicitation and sampling, answers
// each question, sets the log level to info, calls test_elicitation, test_sampling and
// test_tool_with_logging, and prints one JSON line: each call's content or error, how many
// questions each handler answered, the log messages heard, the session id the server issued,
// and the requests that carried it.
//
// $CONNECTIONS picks how requests reach the server: `pooled` (the SDK's own fetch, whose pool
// reuses and opens connections as it likes), `fresh` (a new TCP connection per request, closed
// after its answer: initialize, setLevel, each call and each answer each on its own), or
// `fresh-no-session` (the same, with the Mcp-Session-Id header left off every request).
import http from 'node:http';
import { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const TIMEOUT = { timeout: 30000 };
const mode = process.env.CONNECTIONS ?? 'pooled';
const report = { calls: {}, asked: { elicitation: 0, sampling: 0 }, logs: [], requests: 0, withSession: 0 };

// One request on its own TCP connection (`agent: false`: Connection: close), as a fetch.
function freshFetch(url, init = {}) {
  const headers = Object.fromEntries(new Headers(init.headers ?? {}));
  if (mode === 'fresh-no-session') delete headers['mcp-session-id'];
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers, agent: false }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        for (const one of [v].flat()) if (one !== undefined) h.append(k, one);
      }
      const empty = res.statusCode === 204 || res.statusCode === 304;
      resolve(new Response(empty ? null : Readable.toWeb(res), { status: res.statusCode, headers: h }));
    });
    req.on('error', reject);
    init.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')));
    if (init.body) req.write(init.body);
    req.end();
  });
}

// Counts the requests and those that carried the session id, whichever fetch sends them.
function counting(inner) {
  return (url, init = {}) => {
    report.requests++;
    const sent = new Headers(init.headers ?? {}).get('mcp-session-id');
    if (sent && mode !== 'fresh-no-session') report.withSession++;
    return inner(url, init);
  };
}

const client = new Client(
  { name: 'bernstein-e2e-ts1-session', version: '1.0.0' },
  { capabilities: { elicitation: {}, sampling: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async () => {
  report.asked.elicitation++;
  return { action: 'accept', content: { username: 'ada', email: 'ada@example.org' } };
});
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  report.asked.sampling++;
  return { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'e2e-model' };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  report.logs.push(n.params.data);
});

const calls = [
  ['test_elicitation', { message: 'Who are you?' }],
  ['test_sampling', { prompt: 'Capital of France?' }],
  ['test_tool_with_logging', {}],
];
try {
  const fetch = counting(mode === 'pooled' ? globalThis.fetch : freshFetch);
  const transport = new StreamableHTTPClientTransport(new URL(process.env.URL), { fetch });
  await client.connect(transport, TIMEOUT);
  report.sessionId = transport.sessionId ?? null;
  await client.setLoggingLevel('info', TIMEOUT);
  for (const [name, args] of calls) {
    try {
      const r = await client.callTool({ name, arguments: args }, CallToolResultSchema, TIMEOUT);
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
