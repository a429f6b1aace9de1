"""What-if: replay a job trace on a cluster in a box (docs/whatif.md)."""
