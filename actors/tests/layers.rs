//! `actors/src` and `emulator/src` have no cycle of module dependencies
//! (issues 22 and 44, ARCHITECTURE.md "Layers"): scenario data, ground truth,
//! the shared task/message/world types, the actors and the scheduler's stages
//! each import only what lies below them, so any of them can be read, tested
//! and replaced alone. A cycle is any: a child and its parent, two siblings
//! (`peer_link.rs` and `transport.rs` once), or a longer ring.
//!
//! A module depends on another when its code (outside `#[cfg(test)]`) names a
//! path into it: `crate::…`, `super::…`, or one of its own child modules.
//! Run `cargo test -p dcemu-actors --test layers` to see a cycle named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

type Module = Vec<String>;

/// Every module of the crate, by path, with its file.
fn modules(src: &Path, skip: &[&str]) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, src: &Path, skip: &[&str], out: &mut BTreeMap<Module, PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read actors/src") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(src).expect("under src");
            if skip.iter().any(|s| rel == Path::new(s)) {
                continue;
            }
            if path.is_dir() {
                walk(&path, src, skip, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(src)
                    .expect("under src")
                    .with_extension("");
                let mut module: Module = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                    module.pop();
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, skip, &mut out);
    out
}

/// The paths one file names, as written (`crate`/`super`/child first).
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
    children: BTreeSet<String>,
    /// `pub use` items: the name this module gives them and the path they
    /// come from. A facade's re-export is not a use of its own; a path
    /// through it depends on where the item really lives.
    reexports: BTreeMap<String, Vec<String>>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test_only(&m.attrs) {
            return;
        }
        if m.content.is_none() {
            self.children.insert(m.ident.to_string());
        }
        syn::visit::visit_item_mod(self, m);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    /// `pub(super)`, `pub(in crate::x)`: who may see an item, not a use.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.found
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        /// Each imported path with the name it takes here.
        fn flatten(
            tree: &syn::UseTree,
            prefix: &mut Vec<String>,
            out: &mut Vec<(String, Vec<String>)>,
        ) {
            match tree {
                syn::UseTree::Path(p) => {
                    prefix.push(p.ident.to_string());
                    flatten(&p.tree, prefix, out);
                    prefix.pop();
                }
                syn::UseTree::Name(n) => {
                    let mut path = prefix.clone();
                    path.push(n.ident.to_string());
                    out.push((n.ident.to_string(), path));
                }
                syn::UseTree::Rename(r) => {
                    let mut path = prefix.clone();
                    path.push(r.ident.to_string());
                    out.push((r.rename.to_string(), path));
                }
                syn::UseTree::Glob(_) => out.push((String::new(), prefix.clone())),
                syn::UseTree::Group(g) => {
                    for t in &g.items {
                        flatten(t, prefix, out);
                    }
                }
            }
        }
        if is_test_only(&u.attrs) {
            return;
        }
        let mut imported = Vec::new();
        flatten(&u.tree, &mut Vec::new(), &mut imported);
        for (name, path) in imported {
            if matches!(u.vis, syn::Visibility::Inherited) || name.is_empty() {
                self.found.push(path);
            } else {
                self.reexports.insert(name, path);
            }
        }
    }
}

/// What one module's source says: its child modules and re-exports.
struct Scope {
    children: BTreeSet<String>,
    reexports: BTreeMap<String, Vec<String>>,
}

/// The module a path written in `from` leads into, if it is one of ours,
/// following re-exports to where the item is defined.
fn target(path: &[String], from: &Module, scopes: &BTreeMap<Module, Scope>) -> Option<Module> {
    let mut path = path.to_vec();
    let mut from = from.clone();
    for _ in 0..16 {
        let (module, rest) = lexical(&path, &from, scopes)?;
        match rest
            .first()
            .and_then(|name| scopes[&module].reexports.get(name))
        {
            Some(source) if module != from => {
                path = source.clone();
                path.extend_from_slice(&rest[1..]);
                from = module;
            }
            _ => return Some(module),
        }
    }
    None
}

/// The module a path written in `from` names, and the segments after it.
fn lexical(
    path: &[String],
    from: &Module,
    scopes: &BTreeMap<Module, Scope>,
) -> Option<(Module, Vec<String>)> {
    let children = &scopes[from].children;
    let mut absolute: Module = match path.first().map(String::as_str) {
        Some("crate") => path[1..].to_vec(),
        Some("super") => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let mut base = from[..from.len().checked_sub(ups)?].to_vec();
            base.extend_from_slice(&path[ups..]);
            base
        }
        Some(first) if children.contains(first) => {
            let mut base = from.clone();
            base.extend_from_slice(path);
            base
        }
        _ => return None,
    };
    let mut rest = Vec::new();
    while !absolute.is_empty() {
        if scopes.contains_key(&absolute) {
            rest.reverse();
            return Some((absolute, rest));
        }
        rest.extend(absolute.pop());
    }
    None
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(v: &'a Module, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(v, &mut s);
        }
    }
    s.out
}

/// The module dependencies of the crate whose sources are `src`, leaving
/// out `skip` (files of another crate root there, such as a binary's).
fn dependencies(src: &Path, skip: &[&str]) -> BTreeMap<Module, BTreeSet<Module>> {
    let all = modules(src, skip);
    let mut found = BTreeMap::new();
    let mut scopes = BTreeMap::new();
    for (module, file) in &all {
        let text = std::fs::read_to_string(file).expect("read source");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Paths::default();
        paths.visit_file(&ast);
        found.insert(module.clone(), paths.found);
        scopes.insert(
            module.clone(),
            Scope {
                children: paths.children,
                reexports: paths.reexports,
            },
        );
    }
    found
        .iter()
        .map(|(module, paths)| {
            let to = paths
                .iter()
                .filter_map(|p| target(p, module, &scopes))
                .filter(|t| t != module)
                .collect();
            (module.clone(), to)
        })
        .collect()
}

/// The cycles of `edges`, one line per arrow, or nothing.
fn report(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Option<String> {
    let found = cycles(edges);
    let name = |m: &Module| {
        if m.is_empty() {
            "crate".to_string()
        } else {
            m.join("::")
        }
    };
    let report: Vec<String> = found
        .iter()
        .map(|c| {
            let set: BTreeSet<&Module> = c.iter().collect();
            let arrows: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    edges[a]
                        .iter()
                        .filter(|b| set.contains(b))
                        .map(move |b| format!("  {} -> {}", name(a), name(b)))
                })
                .collect();
            arrows.join("\n")
        })
        .collect();
    (!found.is_empty()).then(|| report.join("\n--\n"))
}

#[test]
fn no_module_depends_on_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = dependencies(&src, &[]);
    assert!(edges.len() > 20, "found the crate's modules");
    if let Some(cycles) = report(&edges) {
        panic!("module cycles in actors/src:\n{cycles}");
    }
}

/// The library of `dcemu-emulator` likewise (its binary's two files,
/// `main.rs` and `cluster_cli.rs`, are another crate and import the
/// library only).
#[test]
fn no_emulator_module_depends_on_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../emulator/src");
    let edges = dependencies(&src, &["main.rs", "cluster_cli.rs"]);
    assert!(edges.len() > 20, "found the crate's modules");
    if let Some(cycles) = report(&edges) {
        panic!("module cycles in emulator/src:\n{cycles}");
    }
}

#[test]
fn the_check_sees_a_cycle_when_there_is_one() {
    let a: Module = vec!["a".into()];
    let b: Module = vec!["b".into()];
    let c: Module = vec!["c".into()];
    let mut edges = BTreeMap::new();
    edges.insert(a.clone(), BTreeSet::from([b.clone()]));
    edges.insert(b.clone(), BTreeSet::from([a.clone(), c.clone()]));
    edges.insert(c.clone(), BTreeSet::new());
    assert_eq!(cycles(&edges).len(), 1);
    edges.insert(b, BTreeSet::from([c]));
    assert!(cycles(&edges).is_empty());
}
