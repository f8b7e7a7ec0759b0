// Scenarios shared by the TypeScript SDK 1.x (ts1.mjs) and 2.x (ts2.mjs) drivers. Each one
// talks to a connected `client` and returns raw observations (whole results, progress events);
// the Python tests in ../ assert on them. `call(name, args, opts)` hides the difference between
// the majors' callTool signatures.

export const CAPABILITY_URI = 'bernstein://capability';

// The tool's JSON payload: structuredContent, else the first text block parsed.
export function payload(result) {
  if (result && result.structuredContent) return result.structuredContent;
  const text = result?.content?.find?.((c) => c.type === 'text')?.text;
  try {
    return text === undefined ? null : JSON.parse(text);
  } catch {
    return text;
  }
}

async function settle(promise) {
  try {
    return { ok: true, value: await promise };
  } catch (e) {
    return { ok: false, error: { message: String(e?.message ?? e), code: e?.code ?? null, name: e?.name ?? null } };
  }
}

async function surface(client) {
  const tools = await client.listTools();
  const resources = await client.listResources();
  const card = await client.readResource({ uri: CAPABILITY_URI });
  const prompts = await client.listPrompts();
  const prompt = await client.getPrompt({
    name: 'orchestrate_goal',
    arguments: { goal: 'Migrate the billing service to the new queue', role: 'backend' },
  });
  const missingPrompt = await settle(client.getPrompt({ name: 'no_such_prompt', arguments: {} }));
  const missingResource = await settle(client.readResource({ uri: 'bernstein://no-such-resource' }));
  return {
    tools: tools.tools.map((t) => t.name),
    resources: resources.resources.map((r) => r.uri),
    card,
    prompts: prompts.prompts.map((p) => p.name),
    prompt,
    missingPrompt,
    missingResource,
  };
}

async function loop(client, call) {
  const steps = {};
  steps.run = await call('bernstein_run', { goal: 'Write the release notes for 0.1', role: 'backend' });
  const run = payload(steps.run)?.result ?? {};
  if (!run.run_id) return steps; // the Python side names what came back instead
  steps.status1 = await call('bernstein_run_status', { run_id: run.run_id });
  steps.status2 = await call('bernstein_run_status', { run_id: run.run_id });
  steps.cancel = await call('bernstein_cancel', { task_id: run.task_id, reason: 'e2e: not needed' });
  steps.after = await call('bernstein_run_status', { run_id: run.run_id });
  return steps;
}

async function progress(client, call, errors) {
  const steps = {};
  steps.run = await call('bernstein_run', { goal: 'progress probe' });
  const run = payload(steps.run)?.result ?? {};
  if (!run.run_id) return steps;
  const events = [];
  let resolved = false;
  steps.status = await call(
    'bernstein_run_status',
    { run_id: run.run_id, wait_ms: 300 },
    { onprogress: (p) => events.push({ ...p, afterResult: resolved }) },
  );
  resolved = true;
  steps.progress = events;
  steps.unknownToken = errors.filter((e) => e.includes('unknown token'));
  return steps;
}

async function badArguments(client, call) {
  return {
    goalWrongType: await settle(call('bernstein_run', { goal: 5 })),
    missingRunId: await settle(call('bernstein_run_status', {})),
    unknownField: await settle(call('bernstein_status', { unexpected: 1 })),
    unknownTool: await settle(call('bernstein_no_such_tool', {})),
    statusAfter: await call('bernstein_status', {}),
  };
}

// tools/list, then one call of each polled tool, so that a validator compiling output
// schemas lazily (at the first call) has compiled them; the warnings are in the report.
async function formats(client, call) {
  const tools = await client.listTools();
  const run = await call('bernstein_run', { goal: 'formats probe' });
  const id = payload(run)?.result?.run_id;
  if (id) await call('bernstein_run_status', { run_id: id });
  await call('bernstein_status', {});
  return { tools: tools.tools.length };
}

// A run read as a resource: the templates, the run's resource_link followed, its id completed,
// an unknown run refused.
async function resources(client, call) {
  const steps = {};
  steps.templates = await client.listResourceTemplates();
  steps.run = await call('bernstein_run', { goal: 'Read this run as a resource' });
  const link = steps.run?.content?.find?.((c) => c.type === 'resource_link');
  if (!link) return steps; // the Python side names what came back instead
  steps.read = await client.readResource({ uri: link.uri });
  steps.status = await call('bernstein_run_status', { run_id: link.name });
  steps.complete = await client.complete({
    ref: { type: 'ref/resource', uri: 'bernstein://runs/{run_id}' },
    argument: { name: 'run_id', value: 'T-' },
  });
  steps.missing = await settle(client.readResource({ uri: 'bernstein://runs/T-0123456789abcdef' }));
  return steps;
}

// Approvals asked of the person through the host. With $ELICIT set (an ElicitResult), the
// drivers declare elicitation and answer every form with it after $ELICIT_DELAY_MS, through
// `answerForm`; `asked` keeps each form's message.
export const asked = [];

export function elicitAnswer() {
  return process.env.ELICIT ? JSON.parse(process.env.ELICIT) : null;
}

export async function answerForm(params) {
  asked.push(params?.message ?? null);
  const delay = Number(process.env.ELICIT_DELAY_MS ?? 0);
  if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
  return elicitAnswer();
}

// `settle`, keeping a protocol error's `data` (where the server names its `reason`).
async function settleData(promise) {
  try {
    return { ok: true, value: await promise };
  } catch (e) {
    return { ok: false, error: { message: String(e?.message ?? e), code: e?.code ?? null, data: e?.data ?? null } };
  }
}

const body = (result) => {
  const p = payload(result);
  return p?.result ?? p;
};

// bernstein_approve on $TASK_ID (a plan made beforehand), with $APPROVE_ARGS merged in.
async function approveTask(client, call) {
  const args = { task_id: process.env.TASK_ID, ...JSON.parse(process.env.APPROVE_ARGS ?? '{}') };
  const approve = await settleData(call('bernstein_approve', args));
  return { approve, body: approve.ok ? body(approve.value) : null, asked };
}

// Finished work: a run that requires approval, completed, then bernstein_approve on it.
async function approveWork(client, call) {
  const run = body(await call('bernstein_run', { goal: 'Reviewed work', requires_approval: true }));
  await call('bernstein_complete', { task_id: run.task_id, result_summary: 'wrote the notes' });
  const approve = await settleData(call('bernstein_approve', { task_id: run.task_id }));
  return { taskId: run.task_id, approve, body: approve.ok ? body(approve.value) : null, asked };
}

export async function runScenario(name, client, call, errors) {
  switch (name) {
    case 'approve_task':
      return approveTask(client, call);
    case 'approve_work':
      return approveWork(client, call);
    case 'formats':
      return formats(client, call);
    case 'surface':
      return surface(client);
    case 'loop':
      return loop(client, call);
    case 'progress':
      return progress(client, call, errors);
    case 'bad_arguments':
      return badArguments(client, call);
    case 'resources':
      return resources(client, call);
    default:
      throw new Error(`unknown scenario ${name}`);
  }
}

// Runs `body` with console output and client errors captured; prints one JSON line:
// {ok, connect, result | error, warnings, errors}. A hung call ends the script after
// `deadlineMs` with what was gathered (a guard against hangs, not a timing assertion).
export async function main(connect, deadlineMs = 45000) {
  const warnings = [];
  const errors = [];
  for (const level of ['warn', 'error', 'log', 'info', 'debug']) {
    console[level] = (...args) => warnings.push(args.map((a) => (typeof a === 'string' ? a : String(a?.message ?? JSON.stringify(a)))).join(' '));
  }
  const out = { ok: false, warnings, errors };
  const print = () => process.stdout.write(JSON.stringify(out) + '\n');
  const timer = setTimeout(() => {
    out.error = `client script deadline (${deadlineMs} ms) passed; stage: ${out.stage}`;
    print();
    process.exit(3);
  }, deadlineMs);
  try {
    out.stage = 'connect';
    const { client, call, info, close } = await connect(errors);
    out.connect = info();
    out.stage = 'scenario';
    out.result = await runScenario(process.env.SCENARIO, client, call, errors);
    out.ok = true;
    out.stage = 'close';
    await close();
  } catch (e) {
    out.error = String(e?.stack ?? e);
  }
  clearTimeout(timer);
  print();
  process.exit(0);
}

export function target() {
  return JSON.parse(process.env.TARGET);
}
