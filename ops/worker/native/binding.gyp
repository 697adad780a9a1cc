{
  "targets": [
    {
      "target_name": "nodefork",
      "sources": ["nodefork.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}
