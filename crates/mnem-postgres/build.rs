//! Marks this package's tests `mnem_needs_server`: the PostgreSQL tests (and the shared
//! conformance suite as it expands here) are `#[ignore]`d in a plain `cargo test`, so a
//! run without a server lists them as ignored rather than passing them unrun.
//! `scripts/test.sh` starts PostgreSQL and runs them with `--ignored`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(mnem_needs_server)");
    println!("cargo::rustc-cfg=mnem_needs_server");
}
