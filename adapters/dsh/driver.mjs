// dsh's own ReactLoopAgent behind Courier's wire protocol (docs/PROTOCOL.md).
// The pre-step hook and the model are held on deferred promises until a
// protocol line completes them; after each line the driver drains the event
// loop (setImmediate rounds) so every effect is in the answer. The agent is
// set up as dsh's own tests do (a cordis Context with its core plugins and a
// model adapter). dsh is bundled in by build.mjs, never copied.
import { createInterface } from 'node:readline'
import { Context } from '@deepseek-ai/cordis'
import LlmRuntime, { LlmAdapter } from '@deepseek-ai/dsh-llm'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime from '@deepseek-ai/dsh-tools'
import AgentRegistry from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'

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
const held = { preStep: undefined, step: undefined }

function deferred() {
  let resolve, reject
  const promise = new Promise((a, b) => { resolve = a; reject = b })
  return { promise, resolve, reject }
}

/** A model whose every call waits for the script's `step` outcome. */
class HeldModel extends LlmAdapter {
  resolveModel(provider, model) {
    return Promise.resolve({ provider, id: model, name: model })
  }

  async * stream() {
    const outcome = deferred()
    held.step = outcome
    const kind = await outcome.promise
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

async function start() {
  const ctx = new Context()
  await ctx.plugin(LlmRuntime)
  await ctx.plugin(SessionStore)
  await ctx.plugin(SystemPrompt)
  await ctx.plugin(ToolRuntime)
  await ctx.plugin(AgentRegistry)
  await ctx.plugin(AgentLoop, { agents: [] })
  ctx.llm.registerAdapter(['courier'], new HeldModel())
  ctx.on('agent/pre-step', ({ messages }, next) => {
    const decision = deferred()
    held.preStep = { decision, messages, next }
    return decision.promise
  })
  const handle = await ctx.agentLoop.createAgent(ctx, {
    sessionId: SessionId('courier'),
    agentOptions: { provider: 'courier', model: 'courier' },
  })
  const { agent } = handle
  for (const [type, data] of Object.entries(LIVE)) {
    ctx.on(type, (payload) => {
      if (payload.agent === agent) emitted.push({ type, data: data(payload) })
    })
  }
  // The session log's single write path: the exact durable order.
  const append = agent.session.append.bind(agent.session)
  agent.session.append = (type, data, ...rest) => {
    const event = append(type, data, ...rest)
    if (DURABLE.has(type)) emitted.push({ type, data })
    return event
  }
  return { agent, handle }
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

/** Feeds one core input to dsh; returns a refusal text or undefined. */
function feed({ agent, handle }, input) {
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
      void handle.dispose()
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

function answer(live, line, number) {
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
  if (value.restart) return [{ unsupported: 'restart' }]
  if (typeof value.input !== 'string') return [{ error: `line ${number}: neither an input, a restart nor a query` }]
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
      lines = answer(live, line, number)
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
