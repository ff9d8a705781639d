//! Paged KV block manager: hands out fixed-size KV pages to sequences and takes them back.
//! Holds no tensors (the backend owns the memory); page ids index the backend's cache.

#[derive(Debug)]
pub struct BlockManager {
    block_size: usize,
    num_pages: usize,
    /// Free page ids; a stack so recently freed (cache-warm) pages are reused first.
    free: Vec<u32>,
}

impl BlockManager {
    pub fn new(num_pages: usize, block_size: usize) -> Self {
        assert!(block_size > 0, "block_size must be > 0");
        BlockManager { block_size, num_pages, free: (0..num_pages as u32).rev().collect() }
    }

    pub fn block_size(&self) -> usize {
        self.block_size
    }
    pub fn num_pages(&self) -> usize {
        self.num_pages
    }
    pub fn free_pages(&self) -> usize {
        self.free.len()
    }
    pub fn used_pages(&self) -> usize {
        self.num_pages - self.free.len()
    }

    /// Pages a table of `table_len` pages must add to hold `tokens` positions.
    pub fn pages_needed(&self, table_len: usize, tokens: usize) -> usize {
        tokens.div_ceil(self.block_size).saturating_sub(table_len)
    }

    pub fn can_grow(&self, table: &[u32], tokens: usize) -> bool {
        self.pages_needed(table.len(), tokens) <= self.free.len()
    }

    /// Extend `table` to cover `tokens` positions. All or nothing: false (and no change)
    /// when there are not enough free pages.
    pub fn grow(&mut self, table: &mut Vec<u32>, tokens: usize) -> bool {
        let n = self.pages_needed(table.len(), tokens);
        if n > self.free.len() {
            return false;
        }
        for _ in 0..n {
            table.push(self.free.pop().expect("checked above"));
        }
        true
    }

    /// Return all of `table`'s pages.
    pub fn release(&mut self, table: &mut Vec<u32>) {
        debug_assert!(table.iter().all(|p| !self.free.contains(p)), "double free of a KV page");
        self.free.append(table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn grows_by_whole_pages_and_never_shares() {
        let mut bm = BlockManager::new(10, 4);
        let (mut a, mut b) = (vec![], vec![]);
        assert!(bm.grow(&mut a, 1));
        assert_eq!(a.len(), 1);
        assert!(bm.grow(&mut a, 4));
        assert_eq!(a.len(), 1, "4 tokens still fit one page of 4");
        assert!(bm.grow(&mut a, 5));
        assert_eq!(a.len(), 2);
        assert!(bm.grow(&mut b, 32));
        assert_eq!(b.len(), 8);
        assert_eq!(bm.free_pages(), 0);
        let all: HashSet<u32> = a.iter().chain(&b).copied().collect();
        assert_eq!(all.len(), 10, "no page handed out twice");
    }

    #[test]
    fn exhaustion_is_all_or_nothing_and_release_returns_pages() {
        let mut bm = BlockManager::new(3, 16);
        let mut a = vec![];
        assert!(bm.grow(&mut a, 40));
        let mut b = vec![];
        assert!(!bm.grow(&mut b, 17), "needs 2 pages, 0 free");
        assert!(b.is_empty());
        assert!(!bm.can_grow(&a, 49));
        bm.release(&mut a);
        assert!(a.is_empty());
        assert_eq!(bm.used_pages(), 0);
        assert!(bm.grow(&mut b, 48));
        assert_eq!(bm.used_pages(), 3);
    }
}
