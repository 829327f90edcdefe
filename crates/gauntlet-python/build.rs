include!("../../build/test_probes.rs");

fn main() {
    // Building the wheel needs maturin (the build backend) and running its tests pytest.
    emit(&[
        ("have_py_maturin", python_has("maturin")),
        ("have_py_pytest", python_has("pytest")),
    ]);
}
