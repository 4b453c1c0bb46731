"""The bottom layer: the scenario model with its fault kinds and anomalies, the history schema and
its writer (a flush thread), the one signal policy every layer follows, the results contract, the
payload codec and Kafka versions.

Every other package may import it; it imports none of them.
"""
