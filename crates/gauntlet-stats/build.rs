include!("../../build/test_probes.rs");

fn main() {
    emit(&[
        ("have_py_scipy", python_has("scipy")),
        ("have_py_statsmodels", python_has("statsmodels")),
    ]);
}
