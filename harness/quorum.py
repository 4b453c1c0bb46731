"""KIP-853's dynamic KRaft quorum: how its nodes are formatted, and its voters read and changed with
Kafka's own kafka-metadata-quorum tool, run inside the cluster."""

from __future__ import annotations

import json
from collections.abc import Callable

import docker
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from contracts.errors import ClusterError
from harness.broker_config import CONTROLLER_PORT, ClusterSpec, cluster_id
from harness.node import KafkaNode
from harness.releases import HOME, RELEASE_FILE, TOOL_JVM

# the release the node runs now (an upgrade's, else the image's); a hung admin call gives up
TOOL = (f'timeout 60 java {TOOL_JVM} -cp "$(cat {HOME}/{RELEASE_FILE} 2>/dev/null || '
        f'echo {HOME}/libs)/*" org.apache.kafka.tools.MetadataQuorumCommand')
PROPERTIES = "/etc/kafka/node.properties"
# the tool's Admin settings: a request to a controller killed or cut off mid-change is given up in
# seconds, not held for the Admin's default minute (the op retries until the voters show it)
ADMIN = ("request.timeout.ms=10000", "default.api.timeout.ms=15000")
CONFIG = "/tmp/kchaos-quorum.properties"
META = "/var/lib/kafka/data/meta.properties"
STATUS_S = 30.0  # how long a quorum without an answer is asked again


class Quorum:
    """The voters of a dynamic quorum, formatted from the spec's first controllers: each node's
    format arguments, who leads and votes now, and controllers added and removed."""

    def __init__(self, spec: ClusterSpec, nodes: Callable[[], list[KafkaNode]]) -> None:
        self._nodes = nodes
        # each initial voter's directory id, named in every voter's format
        self._dirs = {v: cluster_id() for v in spec.controllers()}

    def format_args(self, node_id: int) -> str:
        """What `kafka-storage format` adds for this node: the initial voters, or none (it joins as
        an observer, to be added)."""
        if node_id not in self._dirs:
            return "--no-initial-controllers"
        return "--initial-controllers " + ",".join(
            f"{v}@kafka-{v}:{CONTROLLER_PORT}:{d}" for v, d in self._dirs.items())

    @retry(retry=retry_if_exception_type(ClusterError), stop=stop_after_delay(STATUS_S),
           wait=wait_fixed(2), reraise=True)
    def status(self) -> tuple[int, list[int]]:
        """(the leader's id, the voters' ids) as `describe --status` gives them, asked again while
        the quorum cannot say (no leader after a kill, say)."""
        out = self._tool("describe --status")
        lines = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        try:
            voters = json.loads(lines["CurrentVoters"])
            return int(lines["LeaderId"]), sorted(
                v["id"] if isinstance(v, dict) else int(v) for v in voters)
        except (KeyError, ValueError, TypeError) as exc:
            raise ClusterError(f"kafka-metadata-quorum describe gave no voters:\n{out[-1500:]}"
                               ) from exc

    def add(self, node_id: int) -> None:
        """Add a running observer controller to the voters, from inside it (the tool reads its
        directory id and endpoint from the node's own settings)."""
        self._tool("add-controller", on=node_id, own_settings=True)

    def remove(self, node_id: int) -> None:
        """Remove a voter (running or not), from another running node."""
        self._tool(f"remove-controller --controller-id {node_id} "
                   f"--controller-directory-id {self.directory(node_id)}", avoid=node_id)

    def directory(self, node_id: int) -> str:
        """A node's metadata directory id, from its meta.properties (stopped or running)."""
        if node_id not in self._dirs:
            node = next(n for n in self._nodes() if n.node_id == node_id)
            text = node.read_file(META).decode(errors="replace")
            self._dirs[node_id] = next(line.split("=", 1)[1].strip()
                                       for line in text.splitlines()
                                       if line.startswith("directory.id="))
        return self._dirs[node_id]

    def _tool(self, args: str, on: int | None = None, avoid: int | None = None,
              own_settings: bool = False) -> str:
        """Run kafka-metadata-quorum against every controller, on node `on` (else any running one
        but `avoid`), with the ADMIN settings (after the node's own, which add-controller reads);
        its output, or a ClusterError with it."""
        nodes = [n for n in self._nodes() if n.node_id != avoid and (on is None or n.node_id == on)]
        bootstrap = ",".join(f"{n.alias}:{CONTROLLER_PORT}" for n in self._nodes())
        config = (f"{{ {'cat ' + PROPERTIES + '; ' if own_settings else ''}"
                  f"printf '%s\\n' {' '.join(ADMIN)}; }} > {CONFIG}")
        for node in nodes:
            try:
                ran = node.sh_if_running(f"{config} && {TOOL} --bootstrap-controller {bootstrap} "
                                         f"--command-config {CONFIG} {args} 2>&1")
            except docker.errors.APIError as exc:  # killed between the check and the exec
                raise ClusterError(f"kafka-metadata-quorum on {node.alias}: {exc}") from exc
            if ran is None:
                continue
            code, out = ran
            if code:
                raise ClusterError(f"kafka-metadata-quorum {args.split()[0]} on {node.alias} "
                                   f"failed ({code}): {reason(out)}\n{out[-1500:]}")
            return out
        raise ClusterError(f"kafka-metadata-quorum {args.split()[0]}: no running node to run it "
                           "on")


def reason(out: str) -> str:
    """The tool's own word on why it failed: its output's first line that is neither a log line nor
    a stack frame, capped."""
    said = [s for s in out.splitlines()
            if s.strip() and not s[0].isspace() and not s.startswith(("[", "SLF4J"))]
    return said[0][:200] if said else "no reason in its output"
