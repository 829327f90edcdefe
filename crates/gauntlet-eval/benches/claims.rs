//! `claims_supported` on the labelled corpus (`tests/claims_corpus/`): prints precision and
//! recall per category for the rules the example worlds shipped before ("before") and for the
//! deterministic path with no rules ("after"), then times reading and checking an answer.
//! `CLAIMS_MISTAKES=1` lists every answer the grammar gets wrong.

#[path = "../tests/claims_corpus/corpus.rs"]
mod corpus;

use criterion::{Criterion, criterion_group, criterion_main};
use gauntlet_eval::claims::{self, Vocabulary};

fn tables() {
    let c = corpus::load();
    let before = corpus::measure(&c, false);
    let after = corpus::measure(&c, true);
    println!(
        "\nclaims_supported on the corpus ({} answers)\n",
        after.total.answers
    );
    println!("before (the example worlds' hand-written rules; answers flagged critical):\n");
    println!("{}", corpus::table(&before, false));
    println!("after (derived from the worlds' tools, no rules):\n");
    println!("{}", corpus::table(&after, true));
    if std::env::var_os("CLAIMS_MISTAKES").is_some() {
        for m in &after.mistakes {
            println!("{m}");
        }
    }
}

fn bench(cr: &mut Criterion) {
    tables();
    let c = corpus::load();
    let (_, file, world) = c
        .iter()
        .find(|(n, _, _)| n == "incident-desk")
        .expect("incident desk");
    let answers: Vec<&str> = file.answers.iter().map(|a| a.text.as_str()).collect();
    let situation = &file.situations["closed_4217"];
    cr.bench_function("claims/derive_vocabulary", |b| {
        b.iter(|| Vocabulary::derive(&world.spec.tools, Some(&world.state)))
    });
    // A benchmark-sized state: 25,000 records (ids found by their pattern only).
    let mut big = world.state.clone();
    let incidents = big["incidents"].as_object_mut().expect("incidents");
    let one = incidents["INC-004217"].clone();
    for i in 0..25_000 {
        incidents.insert(format!("INC-{:06}", 100_000 + i), one.clone());
    }
    cr.bench_function("claims/derive_vocabulary_25000_records", |b| {
        b.iter(|| Vocabulary::derive(&world.spec.tools, Some(&big)))
    });
    cr.bench_function("claims/score_corpus_answers", |b| {
        b.iter(|| {
            for a in &answers {
                let (t, state) = corpus::play(world, situation, a);
                std::hint::black_box(claims::claims_supported(
                    &t,
                    (&state).into(),
                    &[],
                    &world.spec.tools,
                    Some(&world.state),
                ));
            }
        })
    });
    // A 200 KB answer: bounded claims, linear time.
    let long: String = "INC-004217 is closed and INC-004300 is open. ".repeat(4500);
    let vocab = Vocabulary::derive(&world.spec.tools, Some(&world.state));
    cr.bench_function("claims/read_200kb_answer", |b| {
        b.iter(|| std::hint::black_box(claims::read(&long, &vocab)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
