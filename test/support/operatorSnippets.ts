import type { Language } from '../../shared/ports/CodeRunner.ts';

/** One operator written in each language; the specs run both languages through the same expectations. */
export type Snippet = Record<Language, string>;

/**
 * Succeeds on the third check_completion with `{ status, polls, result: payload.value * 2, host:
 * connection.host }`, so the outcome proves that initialize, run and every poll saw the same module
 * state. `runReturnsValue` makes run answer `{ started: true }` first, a value the last poll's
 * answer must replace; without it run returns nothing.
 */
export function succeedsOnThirdPoll(runReturnsValue: boolean): Snippet {
  return {
    python: `
polls = 0
state = {}
def initialize(connection, payload, context):
    state["host"] = connection["host"]
def run(connection, payload, context):
    state["result"] = payload["value"] * 2
${runReturnsValue ? '    return {"started": True}\n' : ''}def check_completion(connection, payload, context):
    global polls
    polls += 1
    if polls < 3:
        return {"status": "running", "polls": polls}
    return {"status": "success", "polls": polls, "result": state["result"], "host": state["host"]}
`,
    javascript: `
let polls = 0;
const state = {};
export function initialize(connection, payload, context) {
  state.host = connection.host;
}
export async function run(connection, payload, context) {
  state.result = payload.value * 2;
${runReturnsValue ? '  return { started: true };\n' : ''}}
export function check_completion(connection, payload, context) {
  polls += 1;
  if (polls < 3) return { status: 'running', polls };
  return { status: 'success', polls, result: state.result, host: state.host };
}
`,
  };
}

/**
 * Answers running forever, leaving `<context.dir>/<context.tag>.polled` at each poll: a spec's
 * isCancelled can wait for that file, so cancellation lands once polling has begun.
 */
export function pollsUntilCancelled(): Snippet {
  return {
    python: `
import os
polls = 0
def run(connection, payload, context):
    return {}
def check_completion(connection, payload, context):
    global polls
    polls += 1
    open(os.path.join(context["dir"], context["tag"] + ".polled"), "w").close()
    return {"status": "running", "polls": polls}
`,
    javascript: `
import { writeFileSync } from 'node:fs';
let polls = 0;
export function run() { return {}; }
export function check_completion(connection, payload, context) {
  polls += 1;
  writeFileSync(context.dir + '/' + context.tag + '.polled', '');
  return { status: 'running', polls };
}
`,
  };
}

/**
 * A reuse operator that poisons its interpreter on its first run: it wraps the function the runtime
 * decodes every request with (json.loads / JSON.parse, so it sees each run's decrypted connection)
 * and sets a global marker. Every run answers with its process, the marker as it found it (before
 * setting it) and what the wrapper has seen so far in that process. Whoever gets a process after it
 * hands its requests (its decrypted connection) to the wrapper.
 */
export const POISONS_JSON_DECODING: Snippet = {
  python: `
import builtins, json, os
def run(connection, payload, context):
    found = getattr(builtins, "reuse_marker", None)
    if found is None:
        builtins.reuse_marker = "poisoned"
        builtins.reuse_seen = []
        original = json.loads
        def spy(text, *args, **kwargs):
            builtins.reuse_seen.append(text if isinstance(text, str) else bytes(text).decode("utf-8", "replace"))
            return original(text, *args, **kwargs)
        json.loads = spy
    token = builtins.__dict__.setdefault("process_token", os.urandom(8).hex())
    return {"pid": os.getpid(), "process": token, "marker": found, "seen": "\\n".join(builtins.reuse_seen)}
`,
  javascript: `
exports.run = () => {
  const found = globalThis.reuseMarker ?? null;
  if (found === null) {
    globalThis.reuseMarker = 'poisoned';
    globalThis.reuseSeen = [];
    const original = JSON.parse;
    JSON.parse = (text, reviver) => { globalThis.reuseSeen.push(String(text)); return original(text, reviver); };
  }
  globalThis.processToken ??= require('node:crypto').randomBytes(8).toString('hex');
  return { pid: process.pid, process: globalThis.processToken, marker: found, seen: globalThis.reuseSeen.join('\\n') };
};
`,
};

/** Another operator of the same language: its process and the marker it finds (POISONS_JSON_DECODING's). */
export const PROBES_POISON: Snippet = {
  python:
    'import builtins, os\ndef run(connection, payload, context):\n    token = builtins.__dict__.setdefault("process_token", os.urandom(8).hex())\n    return {"pid": os.getpid(), "process": token, "marker": getattr(builtins, "reuse_marker", None), "seen": ""}\n',
  javascript:
    'exports.run = () => { globalThis.processToken ??= require("node:crypto").randomBytes(8).toString("hex"); return { pid: process.pid, process: globalThis.processToken, marker: globalThis.reuseMarker ?? null, seen: "" }; };\n',
};
