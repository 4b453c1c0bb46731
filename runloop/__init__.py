"""The run loop: one chaos run as an object whose phases are set-up, the workload under the nemesis,
heal, drain and dump, and teardown; then the check that analyzes its history and judges it."""
