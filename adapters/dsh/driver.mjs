// dsh's own ReactLoopAgent behind Courier's wire protocol (docs/PROTOCOL.md).
// The pre-step hook and the model are held on deferred promises until a
// protocol line completes them; after each line the driver drains the event
// loop (setImmediate rounds) so every effect is in the answer. The agent is
// set up as dsh's own tests do (a cordis Context with its core plugins and a
// model adapter). dsh is bundled in by build.mjs, never copied.
import { linkSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { constants as osConstants, tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { Context } from '@deepseek-ai/cordis'
import LlmRuntime, { LlmAdapter } from '@deepseek-ai/dsh-llm'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime from '@deepseek-ai/dsh-tools'
import AgentRegistry from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'

/** The durable events that make up the delivery log (SPEC §6). */
const DURABLE = new Set(['agent/inbox/spliced', 'turn/start', 'step/start', 'user/message', 'step/end', 'turn/end'])
/** The live notifications the contract names, with the fields it keeps. */
const LIVE = {
  'agent/inbox/inserted': ({ message }) => ({ message }),
  'agent/inbox/claimed': ({ message, turn }) => ({ message, turn }),
  'agent/inbox/discarded': ({ message }) => ({ message }),
  'agent/status': ({ status }) => ({ status }),
  'agent/error': ({ turn, step }) => ({ turn, step }),
}

/** What the current line emitted, in emission order. */
let emitted = []
/** The completions dsh is waiting on: at most one of each. */
let held = { preStep: undefined, step: undefined }
/** Where dsh's own JSONL persistence keeps the session (a restart cuts it). */
const root = mkdtempSync(join(tmpdir(), 'courier-dsh-'))
const SESSION = 'courier'
process.on('exit', () => {
  for (const folder of [root, benchLive.folder]) if (folder) rmSync(folder, { recursive: true, force: true })
})
// Courier ends a lingering driver with SIGTERM before SIGKILL: exiting
// here runs the clean-up above, which node's default handling skips.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(signal, () => process.exit(128 + osConstants.signals[signal]))
}

function deferred() {
  let resolve, reject
  const promise = new Promise((a, b) => { resolve = a; reject = b })
  return { promise, resolve, reject }
}

/**
 * A model whose every call waits for the script's `step` outcome, or, on
 * autopilot (a bench agent), completes at once with a text answer.
 */
class HeldModel extends LlmAdapter {
  constructor(live) {
    super()
    this.live = live
  }

  resolveModel(provider, model) {
    return Promise.resolve({ provider, id: model, name: model })
  }

  async * stream() {
    let kind = 'completed'
    if (!this.live.autopilot) {
      const outcome = deferred()
      held.step = outcome
      kind = await outcome.promise
    }
    if (kind === 'fail') throw new Error('step fail (scripted)')
    if (kind === 'tool-calls') {
      // A call to a tool nobody registered: dsh records an error result and goes on.
      const call = { type: 'tool-call', id: 'call-1', name: 'courier-unknown-tool', arguments: '{}' }
      yield { type: 'block-start', index: 0, blockType: 'tool-call' }
      yield { type: 'tool-call-delta', index: 0, id: call.id, name: call.name, argumentsDelta: '{}' }
      yield { type: 'block-end', index: 0, block: call }
      yield { type: 'finish', reason: { kind: 'tool-calls' } }
      return
    }
    yield { type: 'block-start', index: 0, blockType: 'text' }
    yield { type: 'text-delta', index: 0, text: 'ok' }
    yield { type: 'block-end', index: 0, block: { type: 'text', text: 'ok' } }
    yield { type: 'finish', reason: { kind: kind === 'max-tokens' ? 'max-tokens' : 'stop' } }
  }
}

/**
 * A context as dsh's tests build one, plus dsh's JSONL persistence
 * (uncompressed: node 20 has no zstd) under `folder`. On `live.autopilot`
 * the pre-step hook passes at once and nothing is recorded for an answer.
 */
async function context(live, folder = root) {
  const ctx = new Context()
  await ctx.plugin(LlmRuntime)
  await ctx.plugin(SessionStore)
  await ctx.plugin(SystemPrompt)
  await ctx.plugin(ToolRuntime)
  await ctx.plugin(AgentRegistry)
  await ctx.plugin(AgentLoop, { agents: [] })
  await ctx.plugin(JsonlSessionPersistence, { root: folder, compression: 'none' })
  ctx.llm.registerAdapter(['courier'], new HeldModel(live))
  ctx.on('agent/pre-step', ({ agent, messages }, next) => {
    if (agent !== live.agent) return new Promise(() => {})
    if (live.autopilot) return next()
    const decision = deferred()
    held.preStep = { decision, messages, next }
    return decision.promise
  })
  if (live.autopilot) return ctx
  for (const [type, data] of Object.entries(LIVE)) {
    ctx.on(type, (payload) => {
      if (payload.agent === live.agent) emitted.push({ type, data: data(payload) })
    })
  }
  return ctx
}

/** Points `live` at a new agent: its events count, the abandoned one's never do. */
function adopt(live, ctx, handle) {
  const { agent } = handle
  // The session log's single write path: the exact durable order.
  const append = agent.session.append.bind(agent.session)
  agent.session.append = (type, data, ...rest) => {
    const event = append(type, data, ...rest)
    if (DURABLE.has(type) && live.agent === agent) emitted.push({ type, data })
    return event
  }
  Object.assign(live, { ctx, handle, agent })
}

async function start() {
  const live = {}
  const ctx = await context(live)
  const handle = await ctx.agentLoop.createAgent(ctx, {
    sessionId: SessionId(SESSION),
    agentOptions: { provider: 'courier', model: 'courier' },
  })
  adopt(live, ctx, handle)
  return live
}

/** The session file the persistence wrote (one session, so one file). */
function sessionFile(folder = root) {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) {
      const found = sessionFile(path)
      if (found) return found
    } else if (entry.name === 'session.jsonl') return path
  }
  return undefined
}

/**
 * Brings the session file up to date: what a finished disposal wrote, or
 * else a flush of the session as it stands. A disposal with no completion
 * held is awaited to its end; one that waits for the turn it aborts, which
 * may wait on a held completion forever, is given one round to finish, never
 * awaited.
 */
async function flushed(live) {
  const holds = held.preStep !== undefined || held.step !== undefined
  const tick = new Promise(resolve => setImmediate(() => resolve(false)))
  const disposal = live.disposing?.then(() => true)
  const disposed = disposal !== undefined && await (holds ? Promise.race([disposal, tick]) : disposal)
  if (disposed) return retired(live)
  try {
    await live.ctx.sessions.flush(live.agent.session)
  } catch (error) {
    // A session a disposal (or a failed restart) took out of the store
    // has nothing to flush; the file, if any, is what it left. A disposal
    // still running owns the session too (it may be removing it now).
    if (live.disposing === undefined && sessionFile() !== undefined) throw error
  }
}

/**
 * Waits for the final drain of a disposed session's buffered events, which
 * dsh's persistence starts when disposal ends and does not await (a
 * "retirement"). dsh's own coordinator waits for it before it reads the same
 * session again; a restart reads it through a fresh context, whose
 * coordinator knows nothing of the old one's, so the adapter waits here (a
 * private field of the pinned sources: no public call waits without reading
 * the log). Without it, what a restart after a dispose read depended on
 * timing (the disposal's events missing, or a seq gap).
 */
async function retired(live) {
  const retirements = live.ctx.sessionPersistence?.coordinator?.retirements
  await retirements?.get(live.agent.session.id)?.catch(() => {})
}

/**
 * The session file as dsh's persistence has it once flushed (or once a
 * disposal finished): its lines, or null when there is none (dsh writes
 * nothing before its first flush, and disposal removes the session).
 */
async function sessionLog(live) {
  await flushed(live)
  const path = sessionFile()
  if (path === undefined) return null
  return readFileSync(path, 'utf8').split('\n').filter(line => line !== '')
}

/**
 * SPEC §11 on dsh: flush, abandon the context undisposed (disposal would
 * write more), cut the file right before the `lose`-th-from-last delivery
 * event, and resume through dsh's own path in a fresh context. The closers
 * are the delivery events the resume wrote past the cut.
 */
async function restart(live, lose) {
  // A crash during a disposal still waiting for its turn keeps what was
  // flushed; awaiting that disposal would hang on the held completion.
  await flushed(live)
  const path = sessionFile()
  // dsh writes no file before its first flush, and a finished disposal
  // removes the session: either way there is nothing to resume, and the
  // agent (disposing or not) stays as it is.
  if (path === undefined) return [{ unsupported: 'restart: dsh left no session file to resume' }]
  live.disposing = undefined
  live.agent = undefined
  held = { preStep: undefined, step: undefined }
  const lines = readFileSync(path, 'utf8').split('\n').filter(line => line !== '')
  const delivery = lines.flatMap((line, index) => index > 0 && DURABLE.has(JSON.parse(line).type) ? [index] : [])
  const lost = Math.min(lose, delivery.length)
  const cut = lost === 0 ? lines.length : delivery[delivery.length - lost]
  const kept = lines.slice(0, cut)
  writeFileSync(path, kept.map(line => `${line}\n`).join(''))
  const lastSeq = kept.length > 1 ? JSON.parse(kept[kept.length - 1]).seq : -1
  const ctx = await context(live)
  const handle = await ctx.agents.resume({
    resumeSessionId: SessionId(SESSION),
    agentOptions: { provider: 'courier', model: 'courier' },
  })
  const closers = handle.agent.session.events
    .filter(event => event.seq > lastSeq && DURABLE.has(event.type))
    .map(({ type, data }) => ({ type, data }))
  // The answer is the closers, then whatever the resumed agent does next.
  emitted = closers
  adopt(live, ctx, handle)
  return null
}

/** The bench agents' context (made at the first bench) and its own persistence folder. */
const benchLive = { autopilot: true, runs: 0 }

/** A bench request's numbers, or why it is not one. */
function benchRequest(request) {
  const positive = value => Number.isSafeInteger(value) && value > 0
  if (request === null || typeof request !== 'object') return 'bench wants {"batch":N,"cycles":K}'
  const { batch, cycles, log } = request
  if (!positive(batch)) return `bench batch must be a positive integer, got ${JSON.stringify(batch)}`
  if (!positive(cycles)) return `bench cycles must be a positive integer, got ${JSON.stringify(cycles)}`
  if (log !== undefined && (typeof log !== 'string' || log === '')) return 'bench log must be a file path'
  // A path from a protocol line never replaces a file (a device or a pipe
  // is written in place).
  if (log !== undefined && lstatSync(log, { throwIfNoEntry: false }) !== undefined) {
    const target = statSync(log, { throwIfNoEntry: false })
    const device = target !== undefined && (target.isCharacterDevice() || target.isBlockDevice() || target.isFIFO())
    if (!device) return `bench log ${log} exists: refused (write a new file)`
  }
  return { batch, cycles, log }
}

/**
 * The claim cycle of benches/claim.rs, `cycles` times on a fresh agent of
 * its own (the protocol's agent is untouched): `inject` batch-1 messages,
 * `steer` one (it wakes the agent), the pre-step hook passes, the model
 * completes at once, and the turn ends idle. Only the cycles are timed
 * (messages are built before); the cycle is checked after: each claim
 * splice took the whole batch, every message was claimed and entered the
 * step, and the agent is idle with nothing pending. With `log`, dsh's own
 * session file of the run is written there (temp file, then rename).
 */
async function bench({ batch, cycles, log }) {
  benchLive.folder ??= mkdtempSync(join(tmpdir(), 'courier-dsh-bench-'))
  benchLive.ctx ??= await context(benchLive, benchLive.folder)
  const { ctx } = benchLive
  benchLive.runs += 1
  const handle = await ctx.agentLoop.createAgent(ctx, {
    sessionId: SessionId(`bench-${benchLive.runs}`),
    agentOptions: { provider: 'courier', model: 'courier' },
  })
  const { agent } = handle
  benchLive.agent = agent
  let claimed = 0
  const counting = ctx.on('agent/inbox/claimed', (payload) => { if (payload.agent === agent) claimed += 1 })
  const messages = Array.from({ length: cycles }, (_, cycle) => Array.from({ length: batch }, (_, index) => {
    const id = `bench-${cycle}-${index}`
    return { id, role: 'user', content: [{ type: 'text', text: id }], source: { kind: 'user' } }
  }))
  const start = process.hrtime.bigint()
  for (const cycle of messages) {
    for (let index = 0; index < batch - 1; index += 1) agent.inject(cycle[index])
    agent.steer(cycle[batch - 1])
    await agent.whenIdle()
  }
  const nanoseconds = process.hrtime.bigint() - start
  counting()
  try {
    const wrong = benchWrong(agent, batch, cycles, claimed)
    if (wrong) throw new Error(`bench: not the claim cycle: ${wrong}`)
    if (log !== undefined) {
      await ctx.sessions.flush(agent.session)
      const written = readFileSync(sessionFile(benchLive.folder))
      if (lstatSync(log, { throwIfNoEntry: false }) !== undefined) {
        // A device or a pipe (benchRequest refused anything else there).
        writeFileSync(log, written)
      } else {
        // A new file only, whole or absent: linked into place, which fails
        // if a file appeared there since the request was checked.
        const temporary = join(dirname(log), `.${basename(log)}.${process.pid}.tmp`)
        writeFileSync(temporary, written)
        try {
          linkSync(temporary, log)
        } finally {
          rmSync(temporary, { force: true })
        }
      }
    }
  } finally {
    benchLive.agent = undefined
    await handle.dispose()
  }
  return [{ bench: { batch, cycles, nanoseconds: Number(nanoseconds) } }]
}

/** What makes a bench run not `cycles` claim cycles of `batch`, if anything. */
function benchWrong(agent, batch, cycles, claimed) {
  const events = agent.session.events
  const claims = events.filter(({ type, data }) => type === 'agent/inbox/spliced' && data.removedCount > 0 && data.inserted.length === 0)
  const whole = claims.filter(({ data }) => data.removedCount === batch).length
  const entered = events.filter(({ type }) => type === 'user/message').length
  if (claims.length !== cycles || whole !== cycles) return `${claims.length} claims (${whole} of the whole batch) in ${cycles} cycles`
  if (claimed !== batch * cycles) return `${claimed} claimed of ${batch * cycles}`
  if (entered !== batch * cycles) return `${entered} user/message of ${batch * cycles}`
  if (agent.status !== 'idle') return `the agent is ${agent.status} after the cycles`
  if (agent.inbox.hasPending) return 'messages left pending after the cycles'
  return undefined
}

/** Runs `action`, mapping dsh's thrown duplicate to SPEC §10's refusal. */
function refusing(action) {
  try {
    action()
    return undefined
  } catch (error) {
    const duplicate = /message "([^"]*)" is already pending/.exec(String(error?.message))
    if (duplicate) return `duplicate-id: ${duplicate[1]}`
    throw error
  }
}

/** The pre-step decision a protocol input names. */
function decide(input, pending) {
  switch (input.decision) {
    case 'pass': return pending.next()
    case 'reject': return { kind: 'reject' }
    case 'enter': {
      const claimed = new Map(pending.messages.map(message => [message.id, message]))
      return { kind: 'enter', messages: input.batch.map(message => claimed.get(message.id) ?? message) }
    }
    case 'fail': throw new Error('pre-step fail (scripted)')
    default: throw new Error(`unknown decision ${input.decision}`)
  }
}

/** Completions: one of the held promises, else `not-awaiting`. */
function complete(input) {
  if (input.input === 'pre-step') {
    const pending = held.preStep
    if (!pending) return 'not-awaiting: pre-step'
    held.preStep = undefined
    try {
      pending.decision.resolve(decide(input, pending))
    } catch (error) {
      pending.decision.reject(error)
    }
    return undefined
  }
  const pending = held.step
  if (!pending) return 'not-awaiting: step'
  held.step = undefined
  pending.resolve(Object.keys(input).find(key => key !== 'input'))
  return undefined
}

/**
 * Why an input's ids or list words are not what the protocol takes, or
 * undefined: a `target` and a `wakeup` must be one of their words (dsh's
 * inbox would file a message under any target name), and every message id (`message`, `inserted[i]`, `batch[i]`) and a `replace` or
 * `remove` id must be a JSON string (docs/PROTOCOL.md), as `courier
 * serve-protocol` reads them; dsh itself would take `1` and deliver it.
 */
function badId(input) {
  const words = { target: ['next-turn', 'next-step'], wakeup: ['wake', 'no-wake'] }
  for (const [key, allowed] of Object.entries(words)) {
    const value = input[key]
    if (value !== undefined && !allowed.includes(value)) {
      const got = typeof value === 'string' ? `unknown variant \`${value}\`` : `invalid type: ${JSON.stringify(value)}`
      return `input ${input.input}: ${key}: ${got}, expected \`${allowed[0]}\` or \`${allowed[1]}\``
    }
  }
  const where = []
  if (input.message !== undefined) where.push(['message.id', input.message?.id])
  for (const key of ['inserted', 'batch']) {
    if (Array.isArray(input[key])) input[key].forEach((message, index) => where.push([`${key}[${index}].id`, message?.id]))
  }
  if (input.input === 'replace' || input.input === 'remove') where.push(['id', input.id])
  const found = where.find(([, id]) => typeof id !== 'string')
  if (found === undefined) return undefined
  const [path, id] = found
  const got = id === undefined ? 'nothing' : Array.isArray(id) ? 'an array' : id === null ? 'null' : typeof id === 'object' ? 'an object' : `${typeof id} \`${JSON.stringify(id)}\``
  return `input ${input.input}: ${path}: invalid type: ${got}, expected a string`
}

/** Feeds one core input to dsh; returns a refusal text or undefined. */
function feed(live, input) {
  const { agent, handle } = live
  switch (input.input) {
    case 'send':
      return refusing(() => agent.send(input.message, input.target, input.wakeup === 'wake'))
    case 'append':
      return refusing(() => agent.inbox.append(input.target, input.message))
    case 'prepend':
      return refusing(() => agent.inbox.prepend(input.target, input.message))
    case 'replace': {
      let found = true
      const refused = refusing(() => { found = agent.inbox.replace(input.id, input.message) })
      return refused ?? (found ? undefined : `not-pending: ${input.id}`)
    }
    case 'remove':
      return agent.inbox.remove(input.id) ? undefined : `not-pending: ${input.id}`
    case 'splice':
      return refusing(() => agent.inbox.splice(input.target, input.start, input.removed, input.inserted))
    case 'cancel':
      agent.cancel(input.cause, { keepInbox: input.keep_inbox })
      return undefined
    case 'dispose':
      // Disposal closes the session in its store: a later restart resumes
      // from what disposal wrote instead of flushing it again.
      live.disposing = handle.dispose()
      return undefined
    case 'when-idle':
      void agent.whenIdle().then(() => { emitted.push({ type: 'idle' }) })
      return undefined
    case 'pre-step':
    case 'step':
      return complete(input)
    default:
      throw new Error(`unknown input ${input.input}`)
  }
}

/** `status` needs dsh's private phase: its turn and last opened step. */
function status(agent) {
  const phase = agent.phase
  if (agent.status === 'idle') return 'idle'
  const awaiting = held.preStep ? 'pre-step' : held.step ? 'step' : 'nothing'
  return { turn: phase.turn, step: phase.step, awaiting }
}

async function answer(live, line, number) {
  if (line.trim() === '') return undefined
  let value
  try {
    value = JSON.parse(line)
  } catch (error) {
    return [{ error: `line ${number}: not JSON: ${error.message}` }]
  }
  if (value.query === 'inbox') {
    const ids = list => list.map(message => message.id)
    return [{ inbox: { 'next-turn': ids(live.agent.inbox.nextTurn), 'next-step': ids(live.agent.inbox.nextStep) } }]
  }
  if (value.query === 'status') return [{ status: status(live.agent) }]
  if (value.query === 'log') return [{ log: await sessionLog(live) }]
  if (value.bench !== undefined) {
    const request = benchRequest(value.bench)
    if (typeof request === 'string') return [{ error: `line ${number}: ${request}` }]
    return bench(request)
  }
  if (value.restart !== undefined) {
    if (!Number.isInteger(value.restart?.lose) || value.restart.lose < 0) {
      return [{ error: `line ${number}: restart needs a non-negative lose` }]
    }
    return restart(live, value.restart.lose)
  }
  if (typeof value.input !== 'string') return [{ error: `line ${number}: neither an input, a restart, a query nor a bench` }]
  const bad = badId(value)
  if (bad !== undefined) return [{ error: `line ${number}: ${bad}` }]
  const refused = feed(live, value)
  return refused === undefined ? null : [{ refused }]
}

/** setImmediate rounds until two in a row add nothing. */
async function drain() {
  let quiet = 0
  while (quiet < 2) {
    const before = emitted.length
    await new Promise(resolve => setImmediate(resolve))
    quiet = emitted.length === before ? quiet + 1 : 0
  }
}

async function main() {
  const live = await start()
  let number = 0
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    number += 1
    emitted = []
    let lines
    try {
      lines = await answer(live, line, number)
    } catch (error) {
      lines = [{ error: `line ${number}: ${error?.message ?? error}` }]
    }
    if (lines === undefined) continue
    await drain()
    const out = lines ?? emitted
    process.stdout.write([...out, { settled: true }].map(value => `${JSON.stringify(value)}\n`).join(''))
  }
  process.exit(0)
}

process.stdout.on('error', () => process.exit(0))
main().catch((error) => {
  console.error(error)
  process.exit(2)
})
