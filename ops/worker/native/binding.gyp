{
  "targets": [
    {
      "target_name": "nodefork",
      "sources": ["nodefork.c", "sandbox.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    },
    {
      "target_name": "forkcond",
      "type": "shared_library",
      "sources": ["forkcond.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-fPIC"],
      "libraries": ["-ldl", "-lpthread"]
    },
    {
      "target_name": "coderunsandbox",
      "type": "shared_library",
      "sources": ["sandbox.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-fPIC"]
    }
  ]
}
