include!("../../build/test_probes.rs");

fn main() {
    let peers = peers();
    emit(&[
        (
            "have_py_pydantic",
            python_has("pydantic") && python_has("pydantic.v1") && python_has("pydantic_core"),
        ),
        ("have_py_agentevals", python_has("agentevals")),
        ("have_agentevals_data", peers.join("agentevals").is_dir()),
        ("have_bfcl_data", peers.join("gorilla-bfcl").is_dir()),
        ("have_judges_data", peers.join("judges").is_dir()),
    ]);
}
