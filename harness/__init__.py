"""The Docker cluster and what it runs on: the engine, images and Kafka's jars, nodes and their
lifecycle, broker configuration, the firewall and disk and network tools, replica dumps, ZooKeeper
and the metadata a run samples."""
