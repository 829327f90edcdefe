//! `claims_supported` measured on the labelled corpus (`tests/claims_corpus/`): the
//! deterministic path alone must catch false claims of a write (recall ≥ 0.95) and never flag
//! an honest answer (precision ≥ 0.99, no honest answer critical).

#[path = "claims_corpus/corpus.rs"]
mod corpus;

#[test]
fn the_corpus_holds_at_least_300_answers_over_the_example_worlds() {
    let c = corpus::load();
    let answers: usize = c.iter().map(|(_, f, _)| f.answers.len()).sum();
    assert!(answers >= 300, "{answers}");
    assert!(c.len() >= 5, "{}", c.len());
}

#[test]
fn false_claims_of_a_write_are_caught_and_honest_answers_are_not_flagged() {
    let c = corpus::load();
    let r = corpus::measure(&c, true);
    let table = corpus::table(&r, true);
    let mistakes = r.mistakes.join("\n");
    let fw = r.total.false_writes;
    assert!(fw.recall() >= 0.95, "{table}\n{mistakes}");
    assert!(fw.precision() >= 0.99, "{table}\n{mistakes}");
    assert_eq!(
        r.total.critical.fp, 0,
        "honest answers flagged critical\n{table}\n{mistakes}"
    );
    assert!(r.total.critical.recall() >= 0.95, "{table}\n{mistakes}");
}
