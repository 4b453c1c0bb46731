"""The nemesis: each fault kind's op, their targets, the seeded schedule (a random mix included)
that can be replayed, and the lines that carry it out."""
