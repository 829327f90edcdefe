include!("../../build/test_probes.rs");

fn main() {
    emit(&[
        ("have_tau_bench", peers().join("tau-bench").is_dir()),
        ("have_tau2_bench", peers().join("tau2-bench").is_dir()),
    ]);
}
