"""``shiftnet lab``: a whole SDN cluster on one machine, for learning and testing.

``up`` builds the underlay (:mod:`shiftnet.sdn.underlay`), then starts, each
in the background with its log in the lab directory:

* on the master machine (its own namespace on the underlay): the API server
  (``shiftnet apiserver``) on the master's underlay address, and the master
  controllers; both open the lab's SQLite store, which lives on that machine's
  disk (the lab directory);
* one node agent per node namespace, in SDN mode, as OpenShift's node service
  runs on each machine;
* the router inside the first node's namespace, as OpenShift runs its router
  pod with host networking on an infra node;
* the service proxy in kernel (nftables) mode inside every node namespace, so
  a pod's packet to a ClusterIP, routed through ``br0`` into its node, is
  DNATed there;
* the cluster DNS inside the first node's namespace, on port 53 of its host IP
  (each pod's own resolv.conf names it; see ``sdn/podresolver.py``).

Every process in a node namespace is an API client, as on a separate machine:
it has only a kubeconfig holding its node's own token (``system:node:<name>``,
issued into the API server's token file before the server starts), reaches
the API server over the underlay, and keeps its files in a home of its own
(``machines/<node>/``), never the store or the admin token.

Processes enter a network namespace with ``nsenter --net`` rather than
``ip netns exec``: the latter also gives the process a private mount
namespace, and pod namespaces the agent mounts under ``/run/netns`` there
would be invisible to everyone else.

``down`` stops every process by the pid it recorded (all at once) and deletes every
namespace (links, routes and rulesets inside them go with them). Nothing is
installed in the host's own network namespace.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shiftnet.apiserver.config import APIServerConfig
from shiftnet.apiserver.kubeconfig import render_kubeconfig, server_url
from shiftnet.apiserver.pki import ensure_credentials
from shiftnet.apiserver.tokens import NODES_GROUP, issue_token, node_user
from shiftnet.errors import ConfigError, ShiftnetError
from shiftnet.private_files import ensure_private_dir, write_private_file
from shiftnet.sdn.sdnmode import ETC_NETNS
from shiftnet.sdn.underlay import MASTER_ADDRESS, Underlay

log = logging.getLogger(__name__)

CLUSTER_NETWORK = "10.1.0.0/16"
SERVICE_NETWORK = "172.30.0.0/16"
HOST_SUBNET_LENGTH = 8
NETNS_DIR = "/var/run/netns"
API_PORT = 6443  # inside the master's namespace, not the host's
API_START_TIMEOUT = 30.0


class LabError(ShiftnetError):
    """The lab could not be built or taken down."""


@dataclass
class LabProcess:
    role: str
    pid: int
    netns: str | None
    log: str


@dataclass
class LabState:
    prefix: str
    nodes: list[dict[str, str]] = field(default_factory=list)
    processes: list[LabProcess] = field(default_factory=list)
    store: str = ""  # the SQLite file, opened only on the master machine (and the host)
    api: str = ""  # the API server's URL on the underlay
    master_netns: str = ""
    router_http_port: int = 0
    router_https_port: int = 0
    dns: str = ""


def lab_dir(state_dir: Path, prefix: str) -> Path:
    return state_dir / "lab" / prefix


def shiftnet_argv() -> list[str]:
    return [sys.executable, "-m", "shiftnet"]


class Lab:
    def __init__(self, state_dir: Path, prefix: str = "sn-lab") -> None:
        if os.geteuid() != 0:
            raise ConfigError("shiftnet lab needs root: it creates network namespaces")
        self.underlay = Underlay(prefix)
        self.prefix = prefix
        self.dir = lab_dir(state_dir, prefix)
        self.state_file = self.dir / "lab.json"
        self.api_config = APIServerConfig(
            state_dir=self.dir, listen_host=MASTER_ADDRESS, listen_port=API_PORT
        )

    def machine_home(self, node: str) -> Path:
        """Node ``node``'s own state directory: its kubeconfig, pods, router and proxy files."""
        return self.dir / "machines" / node

    def node_kubeconfig(self, node: str) -> Path:
        return self.machine_home(node) / "kubeconfig"

    # ------------------------------------------------------------ state

    def load(self) -> LabState | None:
        try:
            raw = json.loads(self.state_file.read_text())
        except FileNotFoundError:
            return None
        procs = [LabProcess(**p) for p in raw.pop("processes", [])]
        return LabState(**raw, processes=procs)

    def _save(self, state: LabState) -> None:
        ensure_private_dir(self.dir)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2, sort_keys=True))
        tmp.replace(self.state_file)

    # ------------------------------------------------------------ processes

    def _spawn(
        self,
        state: LabState,
        role: str,
        netns: str | None,
        argv: list[str],
        *,
        node: str | None = None,
    ) -> None:
        """Start ``argv`` in ``netns``: on the master machine with the store, or as node
        ``node``'s API client with its kubeconfig and home only."""
        log_path = self.dir / f"{role}.log"
        cmd = ["nsenter", f"--net={NETNS_DIR}/{netns}", "--", *argv] if netns else argv
        if node is None:
            env = {**os.environ, "SHIFTNET_HOME": str(self.dir), "SHIFTNET_STORE": state.store}
        else:  # not even a KUBECONFIG of the user's: the node's own kubeconfig only
            env = {
                **{k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
                "SHIFTNET_HOME": str(self.machine_home(node)),
                "SHIFTNET_STORE": f"kube://{self.node_kubeconfig(node)}",
            }
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        state.processes.append(LabProcess(role, proc.pid, netns, str(log_path)))
        self._save(state)

    def _agent_argv(self, state: LabState, name: str) -> list[str]:
        node = next(n for n in state.nodes if n["name"] == name)
        return [
            *shiftnet_argv(),
            "node",
            "--network",
            "sdn",
            "--node-name",
            name,
            "--host-ip",
            node["hostIP"],
            "--dns",
            state.dns,
        ]

    def stop_agent(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Stop node ``name``'s agent: SIGTERM stops its pods too, SIGKILL leaves them
        running (a crash); the next :meth:`start_agent` adopts them."""
        state = self.loaded()
        role = f"node-{name}"
        for p in [p for p in state.processes if p.role == role]:
            if sig == signal.SIGKILL:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                _reap(p.pid)
            else:
                _stop_groups([p.pid])
            state.processes.remove(p)
        self._save(state)

    def start_agent(self, name: str) -> None:
        state = self.loaded()
        node = next((n for n in state.nodes if n["name"] == name), None)
        if node is None:
            raise LabError(f'lab "{self.prefix}" has no node "{name}"')
        self._spawn(state, f"node-{name}", node["netns"], self._agent_argv(state, name), node=name)

    def loaded(self) -> LabState:
        state = self.load()
        if state is None:
            raise LabError(f'lab "{self.prefix}" is not up')
        return state

    # ------------------------------------------------------------ up / down

    def up(
        self,
        nodes: int,
        *,
        router: bool = True,
        http_port: int = 80,
        https_port: int = 443,
        progress: bool = True,
    ) -> LabState:
        if self.load() is not None:
            raise LabError(f'lab "{self.prefix}" is already up; run "shiftnet lab down" first')
        ensure_private_dir(self.dir)
        master = self.underlay.master
        state = LabState(
            prefix=self.prefix,
            store=f"sqlite:///{self.dir}/state.db",
            api=server_url(MASTER_ADDRESS, API_PORT),
            master_netns=master.netns,
        )
        self._save(state)

        def say(msg: str) -> None:
            if progress:
                print(msg, flush=True)

        try:
            machines = self.underlay.up(nodes)
            state.nodes = [
                {"name": m.name, "netns": m.netns, "hostIP": m.host_ip} for m in machines
            ]
            say(f"underlay: {len(machines)} node namespaces on {self.underlay.switch}")
            base = shiftnet_argv()
            self._issue_node_credentials(state)
            with contextlib.suppress(FileNotFoundError):  # its appearance says "listening"
                self.api_config.kubeconfig_path.unlink()
            self._spawn(
                state,
                "apiserver",
                master.netns,
                [*base, "apiserver", "--api-listen", f"{MASTER_ADDRESS}:{API_PORT}"],
            )
            self._spawn(
                state,
                "master",
                master.netns,
                [
                    *base,
                    "master",
                    "--network-mode",
                    "sdn",
                    "--cluster-network",
                    CLUSTER_NETWORK,
                    "--host-subnet-length",
                    str(HOST_SUBNET_LENGTH),
                    "--service-network",
                    SERVICE_NETWORK,
                ],
            )
            self._wait_api(state)
            say(f"master: API server on {state.api} in {master.netns}, controllers started")
            dns_ip = machines[0].host_ip
            state.dns = f"{dns_ip}:53"
            for m in machines:
                self._spawn(
                    state, f"node-{m.name}", m.netns, self._agent_argv(state, m.name), node=m.name
                )
                say(f"node {m.name}: agent started in {m.netns} ({m.host_ip})")
                self._spawn(
                    state,
                    f"proxy-{m.name}",
                    m.netns,
                    [
                        *base,
                        "proxy",
                        "--mode",
                        "nftables",
                        # same-node hairpin: the reply of a DNATed pod->pod connection
                        # would be bridged straight back, past the un-DNAT; masquerading
                        # makes it come back through the node
                        "--masquerade-all",
                        "--cluster-cidr",
                        CLUSTER_NETWORK,
                    ],
                    node=m.name,
                )
            first = machines[0].name
            self._spawn(
                state,
                "dns",
                machines[0].netns,
                [*base, "dns", "--listen", state.dns],
                node=first,
            )
            say(f"dns: started on {state.dns} in {machines[0].netns}")
            if router:
                state.router_http_port, state.router_https_port = http_port, https_port
                self._spawn(
                    state,
                    "router",
                    machines[0].netns,
                    [
                        *base,
                        "router",
                        # the router serves the lab's network, not only the node's loopback
                        "--bind-address",
                        machines[0].host_ip,
                        "--http-port",
                        str(http_port),
                        "--https-port",
                        str(https_port),
                        # a lab needs few connections; HAProxy's own estimate of the
                        # descriptors it needs with TLS can exceed a low open-file limit
                        "--max-connections",
                        "4000",
                    ],
                    node=first,
                )
                say(f"router: started on {machines[0].host_ip}:{http_port}/{https_port}")
            self._save(state)
            self.wait_ready(state, say=say)
            return state
        except BaseException:
            self.down()
            raise

    def _issue_node_credentials(self, state: LabState) -> None:
        """A token and a kubeconfig per node (in its own home), before the server starts:
        it reads the token file on start. The CA and serving certificate are the ones the
        server then finds and keeps."""
        pki = self.api_config.pki_dir
        creds = ensure_credentials(pki, MASTER_ADDRESS)
        for node in state.nodes:
            name = node["name"]
            user = node_user(name)
            token = issue_token(pki, user, [NODES_GROUP])
            ensure_private_dir(self.machine_home(name))
            write_private_file(
                self.node_kubeconfig(name), render_kubeconfig(state.api, creds.ca_pem, token, user)
            )

    def _wait_api(self, state: LabState, timeout: float = API_START_TIMEOUT) -> None:
        """Until the API server listens: it writes its admin kubeconfig only then."""
        server = next(p for p in state.processes if p.role == "apiserver")
        deadline = time.monotonic() + timeout
        while not self.api_config.kubeconfig_path.exists():
            if not _alive(server.pid):
                raise LabError(f"lab apiserver (pid {server.pid}) exited; see its log {server.log}")
            if time.monotonic() > deadline:
                raise LabError(f"lab apiserver not listening after {timeout:g}s; see {server.log}")
            time.sleep(0.1)

    def wait_ready(
        self, state: LabState, *, say: Callable[[str], None], timeout: float = 60.0
    ) -> None:
        """Until every node is Ready with a HostSubnet; a process that died is an error."""
        import asyncio

        from shiftnet.api import HostSubnet, Node
        from shiftnet.client import Client
        from shiftnet.store import open_store

        names = [n["name"] for n in state.nodes]

        async def poll() -> None:
            store = open_store(state.store)
            try:
                client = Client(store)
                seen: set[str] = set()
                deadline = time.monotonic() + timeout
                while True:
                    for p in state.processes:
                        if not _alive(p.pid):
                            raise LabError(
                                f"lab {p.role} (pid {p.pid}) exited; see its log {p.log}"
                            )
                    nodes = {n.name: n for n in await client.list(Node)}
                    subnets = {h.host or h.name: h for h in await client.list(HostSubnet)}
                    for name in names:
                        node, hs = nodes.get(name), subnets.get(name)
                        ready = node is not None and any(
                            c.type == "Ready" and c.status == "True" for c in node.status.conditions
                        )
                        if name not in seen and ready and hs is not None and hs.subnet:
                            seen.add(name)
                            say(f"node {name}: Ready, subnet {hs.subnet}")
                    if len(seen) == len(names):
                        return
                    if time.monotonic() > deadline:
                        missing = ", ".join(sorted(set(names) - seen))
                        raise LabError(f"lab nodes not Ready after {timeout:g}s: {missing}")
                    await asyncio.sleep(0.2)
            finally:
                await store.close()

        asyncio.run(poll())

    def down(self, progress: bool = False) -> list[str]:
        state = self.load()
        stopped: list[str] = []
        if state is not None:
            signalled = set(_stop_groups([p.pid for p in state.processes]))
            stopped = [f"{p.role} (pid {p.pid})" for p in state.processes if p.pid in signalled]
        removed = self.underlay.down()
        for name in removed:  # resolv.conf of pods whose agent could not tear them down
            if name.startswith("sn-pod-"):
                shutil.rmtree(ETC_NETNS / name, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.state_file.unlink()
        if progress:
            for s in stopped:
                print(f"stopped {s}")
            print(f"removed {len(removed)} network namespaces")
        return removed


def _reap(pid: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:
            if not _alive(pid):
                return
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child (another shiftnet lab command started it)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return done == 0


def _stop_groups(pids: list[int], grace: float = 10.0, kill_wait: float = 2.0) -> list[int]:
    """Stop the process groups ``pids`` lead, all at once: SIGTERM every group, wait for
    all of them under one ``grace`` deadline, then SIGKILL the groups still there.

    Each process takes a moment to shut down, so signalling them together costs the
    slowest one's time, not the sum. Returns the pids that were signalled (those whose
    group was already gone are left out). Zombies of our own children are reaped as
    we wait, so they do not count as alive.
    """
    signalled: list[int] = []
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        signalled.append(pid)
    waiting = _groups_alive(signalled, grace)
    for pid in waiting:
        log.warning("lab process did not stop on SIGTERM; killing pid=%d grace_s=%g", pid, grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    _groups_alive(waiting, kill_wait)
    return signalled


def _groups_alive(pids: list[int], timeout: float) -> list[int]:
    """Wait up to ``timeout`` seconds for the process groups ``pids`` lead to be gone;
    the ones still there."""
    waiting = list(pids)
    deadline = time.monotonic() + timeout
    while waiting:
        for pid in list(waiting):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                waiting.remove(pid)
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return waiting
