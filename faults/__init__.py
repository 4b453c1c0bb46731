"""The nemesis: fault operations, their targets, and a seeded schedule that can be replayed."""
