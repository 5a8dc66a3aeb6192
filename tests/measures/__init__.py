"""One measure family through every front door, against oracles and peers (no module of its own)."""
