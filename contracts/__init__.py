"""The bottom layer: the scenario model, the history schema and writer, the payload codec and Kafka versions.

Every other package may import it; it imports none of them.
"""
