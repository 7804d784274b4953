//! `write-fuzz-seeds DIR [TARGET…]`: writes each target's seeds into
//! `DIR/TARGET/`, one file per seed, as the starting corpus of its fuzzer
//! (`scripts/fuzz.sh` calls it). All targets when none is named.

use std::path::PathBuf;

use anyhow::Context;
use untrusted_input::Target;

fn main() -> anyhow::Result<()> {
    let mut arguments = std::env::args().skip(1);
    let directory = PathBuf::from(arguments.next().context("usage: write-fuzz-seeds DIR [TARGET…]")?);
    let named: Vec<String> = arguments.collect();
    let targets: Vec<Target> = if named.is_empty() {
        Target::ALL.to_vec()
    } else {
        named
            .iter()
            .map(|name| Target::from_name(name).with_context(|| format!("no target {name}")))
            .collect::<Result<_, _>>()?
    };
    for target in targets {
        let seeds_directory = directory.join(target.name());
        std::fs::create_dir_all(&seeds_directory)
            .with_context(|| format!("failed to create {}", seeds_directory.display()))?;
        let seeds = target.seeds();
        for (index, seed) in seeds.iter().enumerate() {
            let file = seeds_directory.join(format!("seed-{index:04}"));
            std::fs::write(&file, seed).with_context(|| format!("failed to write {}", file.display()))?;
        }
        println!("{}: {} seeds in {}", target.name(), seeds.len(), seeds_directory.display());
    }
    Ok(())
}
