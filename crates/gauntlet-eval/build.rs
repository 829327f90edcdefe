include!("../../build/test_probes.rs");

fn main() {
    let peers = peers();
    emit(&[
        ("have_py_scipy", python_has("scipy")),
        ("have_tau_bench", peers.join("tau-bench").is_dir()),
        ("have_agentevals_data", peers.join("agentevals").is_dir()),
        ("have_bfcl_data", peers.join("gorilla-bfcl").is_dir()),
    ]);
}
