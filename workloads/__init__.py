"""The workload's clients in processes of their own: producers, transactional producers, consumers,
the eos-copy stage, the final drain, and the metadata and memory samplers."""
