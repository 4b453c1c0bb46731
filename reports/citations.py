"""The documentation each guarantee rule rests on: Kafka's configuration and design pages, KIPs and
librdkafka's notes."""

DOCS = "https://kafka.apache.org/documentation/"
ACKS = DOCS + "#producerconfigs_acks"
MIN_ISR = DOCS + "#topicconfigs_min.insync.replicas"
UNCLEAN = DOCS + "#topicconfigs_unclean.leader.election.enable"
IDEMPOTENCE = DOCS + "#producerconfigs_enable.idempotence"
RETRIES = DOCS + "#producerconfigs_retries"
IN_FLIGHT = DOCS + "#producerconfigs_max.in.flight.requests.per.connection"
REPLICATION = DOCS + "#replication"
SEMANTICS = DOCS + "#semantics"
# "the maximum size a partition can grow to before we will discard old log segments"
RETENTION = DOCS + "#topicconfigs_retention.bytes"
CONSUMER = DOCS + "#consumerconfigs_enable.auto.commit"
KIP_211 = "https://cwiki.apache.org/confluence/display/KAFKA/KIP-211%3A+Revise+Expiration+Semantics+of+Consumer+Group+Offsets"
ISOLATION = DOCS + "#consumerconfigs_isolation.level"
# "the producer can send to multiple partitions atomically: all or none"
TRANSACTIONS = DOCS + "#semantics"
KIP_98 = "https://cwiki.apache.org/confluence/display/KAFKA/KIP-98+-+Exactly+Once+Delivery+and+Transactional+Messaging"
KIP_447 = "https://cwiki.apache.org/confluence/display/KAFKA/KIP-447%3A+Producer+scalability+for+exactly+once+semantics"
# The client's own documentation, for what librdkafka (confluent-kafka's core) does when a message
# times out.
LIBRDKAFKA_TIMEOUTS = ("https://github.com/confluentinc/librdkafka/blob/master/INTRODUCTION.md"
                       "#message-timeout-considerations")
# An idempotent producer that loses its sequence (an out-of-order sequence, an unknown producer id)
# bumps its epoch and starts its sequences again
KIP_360 = ("https://cwiki.apache.org/confluence/display/KAFKA/KIP-360%3A+Improve+reliability+of+"
           "idempotent%2Ftransactional+producer")
# The ZooKeeper-to-KRaft migration copies the cluster's metadata to the KRaft quorum
KIP_866 = "https://cwiki.apache.org/confluence/display/KAFKA/KIP-866+ZooKeeper+to+KRaft+Migration"
# Share groups: "records are acknowledged individually"; an acquired record whose lock expires is
# available again, and a record past the delivery count limit is archived
KIP_932 = "https://cwiki.apache.org/confluence/display/KAFKA/KIP-932%3A+Queues+for+Kafka"
SHARE_CONSUMER = ("https://kafka.apache.org/44/javadoc/org/apache/kafka/clients/consumer/"
                  "KafkaShareConsumer.html")
SHARE_LIMIT = DOCS + "#brokerconfigs_group.share.delivery.count.limit"
