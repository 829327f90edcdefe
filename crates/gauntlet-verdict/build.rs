include!("../../build/test_probes.rs");

fn main() {
    emit(&[("have_tau_bench", peers().join("tau-bench").is_dir())]);
}
