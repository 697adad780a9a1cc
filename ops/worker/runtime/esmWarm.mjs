// Required by runtime.cjs before any user code, while node's code cache for its built-in modules
// still applies, so that the ES module loader's modules are compiled from that cache and not from
// source when the first user ES module is loaded. Intentionally empty.
export {};
