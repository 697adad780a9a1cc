'use strict';
// V8's setFlagsFromString for the runtime shim (runtime.cjs) and the node fork server
// (forkserver.cjs), without loading `node:v8` (itself ~7 ms of uncached compilation). Loads nothing.

/** The setter, or null when this node has no such binding (callers then only start slower). */
function v8FlagSetter() {
  // process.binding('v8') emits a DeprecationWarning (on stderr, i.e. into the user's log) unless
  // deprecations are silenced; emitWarning checks noDeprecation synchronously.
  const quiet = process.noDeprecation;
  process.noDeprecation = true;
  try {
    const binding = process.binding('v8');
    return typeof binding.setFlagsFromString === 'function' ? binding.setFlagsFromString : null;
  } catch {
    return null;
  } finally {
    if (quiet === undefined) delete process.noDeprecation;
    else process.noDeprecation = quiet;
  }
}

module.exports = { v8FlagSetter };
