//! The call tree a flame graph draws, bounded: a node per call path holding at least a given
//! share of the samples, and per parent one `[other]` node for the paths below that share,
//! so a profile of a million stacks still draws in a few thousand boxes. Built without
//! recursion (stacks can be thousands of frames deep) from the stacks sorted frame by frame.

use std::collections::HashMap;

use super::Folded;

/// The root's name: every sample.
pub(crate) const ROOT: &str = "all";

/// One box: a call path's last frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Node {
    /// Index into [`Tree::names`].
    pub(crate) name: usize,
    /// The caller's node; the root is its own parent.
    pub(crate) parent: usize,
    /// Samples of this path and every path below it.
    pub(crate) total: u64,
    /// Samples with this path as the whole stack.
    pub(crate) own: u64,
    /// An `[other]` node: the paths merged below the share.
    pub(crate) other: bool,
}

/// Nodes with every parent before its children, and siblings in order (by name, `[other]`
/// last); node 0 is the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    /// The names the nodes use, each once.
    pub(crate) names: Vec<String>,
    /// The nodes.
    pub(crate) nodes: Vec<Node>,
    /// Call paths merged into `[other]` nodes.
    pub(crate) merged: u64,
}

/// A range of the sorted stacks sharing a prefix of `depth` frames, which `node` draws.
struct Work {
    lo: usize,
    hi: usize,
    depth: usize,
    node: usize,
}

impl Tree {
    /// The tree of `f` with every path under `per_mille` ‰ of the samples merged.
    pub(crate) fn build(f: &Folded, per_mille: u64) -> Tree {
        let (frames, stacks) = interned(f);
        let mut t = Tree {
            names: vec![ROOT.to_string()],
            nodes: vec![Node {
                name: 0,
                parent: 0,
                total: f.total(),
                own: 0,
                other: false,
            }],
            merged: 0,
        };
        let mut names: HashMap<String, usize> = HashMap::new();
        let keep =
            |samples: u64| samples.saturating_mul(1000) >= f.total().saturating_mul(per_mille);
        let mut work = vec![Work {
            lo: 0,
            hi: stacks.len(),
            depth: 0,
            node: 0,
        }];
        while let Some(w) = work.pop() {
            let mut lo = w.lo;
            // Stacks that end here sort first: they are this path's own samples.
            while lo < w.hi && stacks[lo].0.len() == w.depth {
                t.nodes[w.node].own += stacks[lo].1;
                lo += 1;
            }
            let (mut other, mut other_paths) = (0u64, 0u64);
            while lo < w.hi {
                let frame = stacks[lo].0[w.depth];
                let hi = lo + stacks[lo..w.hi].partition_point(|s| s.0[w.depth] == frame);
                let samples: u64 = stacks[lo..hi].iter().map(|s| s.1).sum();
                if keep(samples) {
                    let name = t.intern(frames[frame as usize], &mut names);
                    let node = t.push(name, w.node, samples, false);
                    work.push(Work {
                        lo,
                        hi,
                        depth: w.depth + 1,
                        node,
                    });
                } else {
                    other += samples;
                    other_paths += 1;
                }
                lo = hi;
            }
            if other_paths > 0 {
                let label = format!("[other: {other_paths} below {} %]", per_mille as f64 / 10.0);
                let name = t.intern(&label, &mut names);
                let node = t.push(name, w.node, other, true);
                t.nodes[node].own = other;
                t.merged += other_paths;
            }
        }
        t
    }

    /// The index of `name` in the names, added if new.
    fn intern(&mut self, name: &str, names: &mut HashMap<String, usize>) -> usize {
        if let Some(&i) = names.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        names.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }

    /// Adds a node; its index.
    fn push(&mut self, name: usize, parent: usize, total: u64, other: bool) -> usize {
        self.nodes.push(Node {
            name,
            parent,
            total,
            own: 0,
            other,
        });
        self.nodes.len() - 1
    }

    /// The samples of `f` (another profile) on each of this tree's paths: per node, its
    /// total; an `[other]` node gets what its parent has outside the parent's other
    /// children and own samples (paths `f` has and this tree does not draw).
    pub(crate) fn totals_of(&self, f: &Folded) -> Vec<u64> {
        let mut child: HashMap<(usize, &str), usize> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if !n.other {
                child.insert((n.parent, self.names[n.name].as_str()), i);
            }
        }
        let (mut total, mut own) = (vec![0u64; self.nodes.len()], vec![0u64; self.nodes.len()]);
        for (stack, count) in f.stacks() {
            let mut at = 0;
            total[0] += count;
            let mut whole = true;
            for frame in stack.split(';') {
                match child.get(&(at, frame)) {
                    Some(&c) => {
                        at = c;
                        total[c] += count;
                    }
                    None => {
                        whole = false;
                        break;
                    }
                }
            }
            if whole {
                own[at] += count;
            }
        }
        self.fill_others(&mut total, &own);
        total
    }

    /// Each `[other]` node's total: its parent's less the parent's own and other children.
    fn fill_others(&self, total: &mut [u64], own: &[u64]) {
        let mut rest: Vec<u64> = total.iter().zip(own).map(|(t, o)| t - o).collect();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if !n.other {
                rest[n.parent] -= total[i];
            }
        }
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.other {
                total[i] = rest[n.parent];
            }
        }
    }
}

/// The frames of `f` sorted by name, and its stacks as indices into them, sorted frame by
/// frame (so the stacks below any call path are one range, their callees in name order).
fn interned(f: &Folded) -> (Vec<&str>, Vec<(Vec<u32>, u64)>) {
    // Numbered as first seen (one hash per frame), then renumbered by name.
    let mut index: HashMap<&str, u32> = HashMap::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut stacks: Vec<(Vec<u32>, u64)> = Vec::with_capacity(f.len());
    for (stack, count) in f.stacks() {
        let ids = stack
            .split(';')
            .map(|frame| {
                *index.entry(frame).or_insert_with(|| {
                    seen.push(frame);
                    (seen.len() - 1) as u32
                })
            })
            .collect();
        stacks.push((ids, count));
    }
    let mut order: Vec<u32> = (0..seen.len() as u32).collect();
    order.sort_unstable_by_key(|&i| seen[i as usize]);
    let mut rank = vec![0u32; seen.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    for (ids, _) in &mut stacks {
        for id in ids.iter_mut() {
            *id = rank[*id as usize];
        }
    }
    stacks.sort_unstable();
    (order.iter().map(|&i| seen[i as usize]).collect(), stacks)
}

#[cfg(test)]
mod tests {
    use super::super::folded::MAX_STACK_FRAMES;
    use super::*;

    fn tree(text: &str, per_mille: u64) -> Tree {
        Tree::build(&Folded::parse(text).unwrap(), per_mille)
    }

    /// `name(total/own)` per node in order, for comparing whole trees.
    fn shape(t: &Tree) -> Vec<String> {
        t.nodes
            .iter()
            .map(|n| format!("{}<{}:{}/{}", t.names[n.name], n.parent, n.total, n.own))
            .collect()
    }

    #[test]
    fn paths_become_nodes_with_totals_and_own_samples() {
        let t = tree(
            "srv;main;burn 60\nsrv;main;parse 30\nsrv;main 10\nsrv;b 5 \n",
            1,
        );
        assert_eq!(
            shape(&t),
            [
                "all<0:105/0",
                "srv<0:105/0",
                "b<1:5/5",
                "main<1:100/10",
                "burn<3:60/60",
                "parse<3:30/30"
            ]
        );
        assert_eq!(t.merged, 0);
        for (i, n) in t.nodes.iter().enumerate().skip(1) {
            assert!(n.parent < i, "parents first");
        }
    }

    #[test]
    fn small_paths_merge_into_one_other_node_per_parent() {
        // 1 ‰ of 10,000 samples is 10: the paths of 9 samples and less merge, with what is
        // below them.
        let mut text =
            String::from("srv;main;burn 9900\nsrv;main;tiny_a 9\nsrv;main;tiny_b;deep 9\n");
        text.push_str("srv;main;edge 10\nsrv;log 9\nsrv;log2 9\nsrv;main;tiny_c 54\n");
        let t = tree(&text, 1);
        let names: Vec<&str> = t.nodes.iter().map(|n| t.names[n.name].as_str()).collect();
        assert_eq!(
            names,
            [
                "all",
                "srv",
                "main",
                "[other: 2 below 0.1 %]",
                "burn",
                "edge",
                "tiny_c",
                "[other: 2 below 0.1 %]"
            ]
        );
        assert_eq!(
            t.names.iter().filter(|n| n.starts_with("[other")).count(),
            1,
            "interned"
        );
        let others: Vec<_> = t
            .nodes
            .iter()
            .filter(|n| n.other)
            .map(|n| (n.total, n.own))
            .collect();
        assert_eq!(others, [(18, 18), (18, 18)]);
        assert_eq!(t.merged, 4);
        assert_eq!(t.nodes[0].total, 10_000);
        // Children's totals and own samples add up to each parent's.
        for (i, n) in t.nodes.iter().enumerate() {
            let kids: u64 = t
                .nodes
                .iter()
                .skip(1)
                .filter(|c| c.parent == i)
                .map(|c| c.total)
                .sum();
            assert_eq!(kids + n.own, n.total, "node {i}");
        }
    }

    #[test]
    fn deep_stacks_build_without_recursion() {
        let deep = vec!["f"; MAX_STACK_FRAMES].join(";");
        let t = tree(&format!("{deep} 3\n"), 1);
        assert_eq!(t.nodes.len(), MAX_STACK_FRAMES + 1);
        assert_eq!(t.names, ["all", "f"], "a name once");
        assert_eq!(t.nodes[MAX_STACK_FRAMES].own, 3);
    }

    #[test]
    fn another_profile_is_counted_on_this_trees_paths() {
        let b = tree(
            "srv;main;burn 980\nsrv;main;json 10\nsrv;main;rare 5\nsrv;main 5\n",
            10,
        );
        let a = Folded::parse("srv;main;burn 500\nsrv;main;rare 7\nsrv;main;gone 3\nsrv;idle 2\n")
            .unwrap();
        let totals = b.totals_of(&a);
        let by_name: Vec<(&str, u64)> = b
            .nodes
            .iter()
            .zip(&totals)
            .map(|(n, t)| (b.names[n.name].as_str(), *t))
            .collect();
        // B draws srv, main, burn, json (1 %) and an [other] for rare; A's `rare` and `gone`
        // are that [other]; A's idle is in srv's total only.
        assert_eq!(
            by_name,
            [
                ("all", 512),
                ("srv", 512),
                ("main", 510),
                ("burn", 500),
                ("json", 0),
                ("[other: 1 below 1 %]", 10)
            ]
        );
    }
}
