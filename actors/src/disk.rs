//! A server's disk as harvested storage: the block replicas stored on it
//! (harvesting §3.3, §4.2). A reimage reformats it: every replica is lost.
//! The name node places and removes replicas; the server only keeps them and
//! reports what a reimage destroyed.

use std::collections::BTreeMap;

/// Identifier of a data block.
pub type BlockId = u64;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Disk {
    capacity_mb: u64,
    used_mb: u64,
    replicas: BTreeMap<BlockId, u64>,
}

/// Why a replica was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiskError {
    #[error("block {0} already has a replica on this disk")]
    Duplicate(BlockId),
    #[error("no room for {needed_mb} MB: {free_mb} MB free")]
    Full { needed_mb: u64, free_mb: u64 },
}

impl Disk {
    pub fn new(capacity_mb: u64) -> Self {
        Disk {
            capacity_mb,
            ..Disk::default()
        }
    }

    /// Stores a replica of `block` of `size_mb`.
    pub fn store(&mut self, block: BlockId, size_mb: u64) -> Result<(), DiskError> {
        if self.replicas.contains_key(&block) {
            return Err(DiskError::Duplicate(block));
        }
        let free_mb = self.capacity_mb - self.used_mb;
        if size_mb > free_mb {
            return Err(DiskError::Full {
                needed_mb: size_mb,
                free_mb,
            });
        }
        self.replicas.insert(block, size_mb);
        self.used_mb += size_mb;
        Ok(())
    }

    /// Removes the replica of `block`, if the disk has one.
    pub fn remove(&mut self, block: BlockId) -> bool {
        match self.replicas.remove(&block) {
            Some(size) => {
                self.used_mb -= size;
                true
            }
            None => false,
        }
    }

    /// Reformats the disk: returns the blocks whose replicas were lost, in order.
    pub fn reimage(&mut self) -> Vec<BlockId> {
        self.used_mb = 0;
        std::mem::take(&mut self.replicas).into_keys().collect()
    }

    pub fn has(&self, block: BlockId) -> bool {
        self.replicas.contains_key(&block)
    }

    pub fn used_mb(&self) -> u64 {
        self.used_mb
    }

    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reimage_empties_the_disk_and_names_what_was_lost() {
        let mut disk = Disk::new(1_000);
        disk.store(7, 300).unwrap();
        disk.store(3, 300).unwrap();
        assert_eq!(disk.used_mb(), 600);
        assert_eq!(disk.reimage(), vec![3, 7]);
        assert_eq!((disk.used_mb(), disk.replicas()), (0, 0));
        assert!(!disk.has(7));
        disk.store(7, 300).unwrap();
        assert!(disk.has(7), "a reimaged disk can be used again");
    }

    #[test]
    fn capacity_and_duplicates_are_enforced() {
        let mut disk = Disk::new(500);
        disk.store(1, 400).unwrap();
        assert_eq!(disk.store(1, 10), Err(DiskError::Duplicate(1)));
        assert_eq!(
            disk.store(2, 200),
            Err(DiskError::Full {
                needed_mb: 200,
                free_mb: 100
            })
        );
        assert!(disk.remove(1));
        assert!(!disk.remove(1));
        disk.store(2, 200).unwrap();
    }
}
