"""The bottom layer: the scenario model with its fault kinds and anomalies, the history schema and its writer (a
flush thread that defers signals), the results contract, the payload codec and Kafka versions.

Every other package may import it; it imports none of them.
"""
