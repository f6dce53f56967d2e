"""Kubernetes core/v1 rules for Pod, Service, Endpoints and Node specs.

Messages follow Kubernetes' field errors. Where shiftnet differs (loopback
addresses are allowed for pods and endpoints, probe numbers must be >= 1
because shiftnet does not default zeros) ``docs/api.md`` says so.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from shiftnet.api import names
from shiftnet.api.core import (
    DNS_CLUSTER_FIRST,
    DNS_CLUSTER_FIRST_WITH_HOST_NET,
    DNS_DEFAULT,
    DNS_NONE,
    IPV4,
    IPV6,
    PREFER_DUAL_STACK,
    REQUIRE_DUAL_STACK,
    SINGLE_STACK,
    Container,
    ContainerPort,
    EndpointAddress,
    EndpointPort,
    Endpoints,
    Node,
    Pod,
    PodSpec,
    Probe,
    Service,
    ServicePort,
    Toleration,
)
from shiftnet.api.fielderrors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    join,
    not_supported,
    required,
)
from shiftnet.api.meta_validation import label_errors

PROTOCOLS = ("SCTP", "TCP", "UDP")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")
# resource.Quantity's serialization: a decimal number with a binary or decimal suffix
_QUANTITY_RE = re.compile(
    r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?\Z"
)
_QUANTITY_MSG = "must match the regular expression " + repr(
    "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
)
MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
TRAFFIC_POLICIES = ("Cluster", "Local")
LB_ONLY = "may only be used when `type` is 'LoadBalancer'"
HTTP_SCHEMES = ("HTTP", "HTTPS")
NODE_ADDRESS_TYPES = ("ExternalDNS", "ExternalIP", "Hostname", "InternalDNS", "InternalIP")
MAX_AFFINITY_TIMEOUT = 86400
IP_FAMILIES = (IPV4, IPV6)
IP_FAMILY_POLICIES = (PREFER_DUAL_STACK, REQUIRE_DUAL_STACK, SINGLE_STACK)
DNS_POLICIES = (DNS_CLUSTER_FIRST, DNS_CLUSTER_FIRST_WITH_HOST_NET, DNS_DEFAULT, DNS_NONE)
MAX_DNS_NAMESERVERS = 3  # Kubernetes' limits, which are glibc's (MAXNS) and kubelet's
MAX_DNS_SEARCH_PATHS = 32
MAX_DNS_SEARCH_LIST_CHARS = 2048


def _first(path: str, value: str | int, reasons: Iterable[str]) -> list[FieldError]:
    for r in reasons:
        return [invalid(path, value, r)]
    return []


def port_errors(path: str, port: int) -> list[FieldError]:
    return _first(path, port, names.port_number_errors(port))


def protocol_errors(path: str, protocol: str) -> list[FieldError]:
    return [] if protocol in PROTOCOLS else [not_supported(path, protocol, PROTOCOLS)]


def int_or_port_name_errors(path: str, value: int | str) -> list[FieldError]:
    """A port given as a number (1-65535) or an IANA service name (``http``)."""
    if isinstance(value, int):
        return port_errors(path, value)
    if not value:
        return [required(path)]
    return _first(path, value, names.port_name_errors(value))


# ---------------------------------------------------------------- Pod


def _probe_errors(probe: Probe, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    handlers = [
        (name, h)
        for name, h in (
            ("exec", probe.exec_),
            ("httpGet", probe.http_get),
            ("tcpSocket", probe.tcp_socket),
        )
        if h is not None
    ]
    if not handlers:
        out.append(required(path, "must specify a handler type"))
    for name, _ in handlers[1:]:
        out.append(forbidden(join(path, name), "may not specify more than 1 handler type"))
    if probe.exec_ is not None and not probe.exec_.command:
        out.append(required(join(path, "exec", "command")))
    if probe.http_get is not None:
        get = probe.http_get
        out += int_or_port_name_errors(join(path, "httpGet", "port"), get.port)
        if not get.path.startswith("/"):
            out.append(invalid(join(path, "httpGet", "path"), get.path, "must begin with /"))
        if get.scheme not in HTTP_SCHEMES:
            out.append(not_supported(join(path, "httpGet", "scheme"), get.scheme, HTTP_SCHEMES))
    if probe.tcp_socket is not None:
        out += int_or_port_name_errors(join(path, "tcpSocket", "port"), probe.tcp_socket.port)
    if probe.initial_delay_seconds < 0:
        out.append(
            invalid(
                join(path, "initialDelaySeconds"),
                probe.initial_delay_seconds,
                "must be greater than or equal to 0",
            )
        )
    for name, value in (
        ("periodSeconds", probe.period_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ):
        if value < 1:
            out.append(invalid(join(path, name), value, "must be greater than or equal to 1"))
    return out


def _container_port_errors(port: ContainerPort, path: str) -> list[FieldError]:
    out: list[FieldError] = []
    if port.name:
        out += _first(join(path, "name"), port.name, names.port_name_errors(port.name))
    out += port_errors(join(path, "containerPort"), port.container_port)
    if port.host_port:
        out += port_errors(join(path, "hostPort"), port.host_port)
    out += protocol_errors(join(path, "protocol"), port.protocol)
    if port.host_ip:
        out += _first(join(path, "hostIP"), port.host_ip, names.ip_errors(port.host_ip))
    return out


def _container_errors(c: Container, path: str, port_names: set[str]) -> list[FieldError]:
    out: list[FieldError] = []
    if not c.name:
        out.append(required(join(path, "name")))
    else:
        out += _first(join(path, "name"), c.name, names.dns1123_label_errors(c.name))
    for j, port in enumerate(c.ports):
        ppath = join(path, "ports", j)
        out += _container_port_errors(port, ppath)
        if port.name:
            if port.name in port_names:
                out.append(duplicate(join(ppath, "name"), port.name))
            port_names.add(port.name)
    for j, env in enumerate(c.env):
        epath = join(path, "env", j, "name")
        if not env.name:
            out.append(required(epath))
        else:
            out += _first(epath, env.name, names.env_var_name_errors(env.name))
    for name, probe in (("readinessProbe", c.readiness_probe), ("livenessProbe", c.liveness_probe)):
        if probe is not None:
            out += _probe_errors(probe, join(path, name))
    if c.image_pull_policy is not None and c.image_pull_policy not in PULL_POLICIES:
        out.append(not_supported(join(path, "imagePullPolicy"), c.image_pull_policy, PULL_POLICIES))
    policy = c.termination_message_policy
    if policy is not None and policy not in MESSAGE_POLICIES:
        out.append(not_supported(join(path, "terminationMessagePolicy"), policy, MESSAGE_POLICIES))
    if c.resources is not None:
        for part, amounts in (("limits", c.resources.limits), ("requests", c.resources.requests)):
            for name, amount in (amounts or {}).items():
                qpath = join(path, "resources", part, name)
                if isinstance(amount, int):
                    amount = str(amount)
                if not _QUANTITY_RE.match(amount):
                    out.append(invalid(qpath, amount, _QUANTITY_MSG))
    if c.liveness_probe is not None and c.liveness_probe.success_threshold != 1:
        out.append(
            invalid(
                join(path, "livenessProbe", "successThreshold"),
                c.liveness_probe.success_threshold,
                "must be 1",
            )
        )
    return out


def pod_errors(pod: Pod) -> list[FieldError]:
    spec = pod.spec
    out: list[FieldError] = []
    if not spec.containers:
        out.append(required("spec.containers"))
    seen: set[str] = set()
    port_names: set[str] = set()
    for i, c in enumerate(spec.containers):
        path = join("spec.containers", i)
        out += _container_errors(c, path, port_names)
        if c.name and c.name in seen:
            out.append(duplicate(join(path, "name"), c.name))
        seen.add(c.name)
    if spec.restart_policy not in RESTART_POLICIES:
        out.append(not_supported("spec.restartPolicy", spec.restart_policy, RESTART_POLICIES))
    if spec.termination_grace_period_seconds < 0:
        out.append(
            invalid(
                "spec.terminationGracePeriodSeconds",
                spec.termination_grace_period_seconds,
                "must be greater than or equal to 0",
            )
        )
    for name, value in (("hostname", spec.hostname), ("subdomain", spec.subdomain)):
        if value:
            out += _first(join("spec", name), value, names.dns1123_label_errors(value))
    if spec.node_name:
        out += _first(
            "spec.nodeName", spec.node_name, names.dns1123_subdomain_errors(spec.node_name)
        )
    out += label_errors(spec.node_selector, "spec.nodeSelector")
    out += _dns_errors(spec)
    out += _host_alias_errors(spec)
    for i, t in enumerate(spec.tolerations or ()):
        out += _toleration_errors(t, join("spec.tolerations", i))
    return out


def _toleration_errors(t: Toleration, path: str) -> list[FieldError]:
    """As upstream's ValidateTolerations: the operator, the effect, and seconds only for
    NoExecute."""
    out: list[FieldError] = []
    if t.key:
        out += _first(join(path, "key"), t.key, names.qualified_name_errors(t.key))
    if t.operator and t.operator not in TOLERATION_OPERATORS:
        out.append(not_supported(join(path, "operator"), t.operator, TOLERATION_OPERATORS))
    if t.operator == "Exists" and t.value:
        out.append(
            invalid(
                join(path, "operator"), t.value, "value must be empty when `operator` is 'Exists'"
            )
        )
    if not t.key and t.operator != "Exists":
        out.append(
            invalid(
                join(path, "operator"),
                t.operator or "",
                "operator must be Exists when `key` is empty, which means"
                ' "match all values and all keys"',
            )
        )
    if t.effect and t.effect not in TAINT_EFFECTS:
        out.append(not_supported(join(path, "effect"), t.effect, TAINT_EFFECTS))
    if t.toleration_seconds is not None and t.effect != "NoExecute":
        out.append(
            invalid(
                join(path, "effect"),
                t.effect or "",
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            )
        )
    return out


def _dns_errors(spec: PodSpec) -> list[FieldError]:
    """``dnsPolicy`` and ``dnsConfig`` with Kubernetes' rules and limits."""
    out: list[FieldError] = []
    policy = spec.dns_policy
    if policy is not None:
        if policy == "":
            out.append(required("spec.dnsPolicy"))
        elif policy not in DNS_POLICIES:
            out.append(not_supported("spec.dnsPolicy", policy, DNS_POLICIES))
    cfg = spec.dns_config
    if policy == DNS_NONE:
        if cfg is None:
            why = "must provide `dnsConfig` when `dnsPolicy` is None"
            return [*out, required("spec.dnsConfig", why)]
        if not cfg.nameservers:
            why = "must provide at least one DNS nameserver when `dnsPolicy` is None"
            return [*out, required("spec.dnsConfig.nameservers", why)]
    if cfg is None:
        return out
    if len(cfg.nameservers) > MAX_DNS_NAMESERVERS:
        out.append(
            invalid(
                "spec.dnsConfig.nameservers",
                ",".join(cfg.nameservers),
                f"must not have more than {MAX_DNS_NAMESERVERS} nameservers",
            )
        )
    for i, ns in enumerate(cfg.nameservers):
        out += _first(join("spec.dnsConfig.nameservers", i), ns, names.ip_errors(ns))
    if len(cfg.searches) > MAX_DNS_SEARCH_PATHS:
        out.append(
            invalid(
                "spec.dnsConfig.searches",
                ",".join(cfg.searches),
                f"must not have more than {MAX_DNS_SEARCH_PATHS} search paths",
            )
        )
    if len(" ".join(cfg.searches)) > MAX_DNS_SEARCH_LIST_CHARS:
        out.append(
            invalid(
                "spec.dnsConfig.searches",
                " ".join(cfg.searches),
                f"must not have more than {MAX_DNS_SEARCH_LIST_CHARS} characters "
                "(including spaces) in the search list",
            )
        )
    for i, search in enumerate(cfg.searches):
        domain = search.removesuffix(".")  # a trailing dot is fine
        out += _first(
            join("spec.dnsConfig.searches", i), domain, names.dns1123_subdomain_errors(domain)
        )
    for i, option in enumerate(cfg.options):
        path = join("spec.dnsConfig.options", i)
        if not option.name:
            out.append(required(path, "must not be empty"))
        # resolv.conf takes one line of words: an option is one word (``name`` or
        # ``name:value``), so whitespace or a comment sign would write something else
        for field, text in (("name", option.name), ("value", option.value or "")):
            if any(c.isspace() or c in "#;" or not c.isprintable() for c in text):
                out.append(
                    invalid(
                        join(path, field),
                        text,
                        "must not contain whitespace, '#' or ';' (it is a resolv.conf option)",
                    )
                )
    return out


def _host_alias_errors(spec: PodSpec) -> list[FieldError]:
    out: list[FieldError] = []
    for i, alias in enumerate(spec.host_aliases or []):
        path = join("spec.hostAliases", i)
        out += _first(join(path, "ip"), alias.ip, names.ip_errors(alias.ip))
        for j, host in enumerate(alias.hostnames):
            out += _first(join(path, "hostnames", j), host, names.dns1123_subdomain_errors(host))
    return out


# ---------------------------------------------------------------- Service


def _service_port_errors(port: ServicePort, path: str, need_name: bool) -> list[FieldError]:
    out: list[FieldError] = []
    if not port.name:
        if need_name:
            out.append(required(join(path, "name")))
    else:
        out += _first(join(path, "name"), port.name, names.dns1123_label_errors(port.name))
    out += protocol_errors(join(path, "protocol"), port.protocol)
    out += port_errors(join(path, "port"), port.port)
    target = port.target_port
    if target is not None and target not in (0, ""):  # unset: defaults to port
        out += int_or_port_name_errors(join(path, "targetPort"), target)
    if port.node_port:
        out += port_errors(join(path, "nodePort"), port.node_port)
    return out


def _service_ports_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    out: list[FieldError] = []
    if not spec.ports and spec.type != "ExternalName" and spec.cluster_ip != "None":
        out.append(required("spec.ports"))
    need_name = len(spec.ports) > 1
    seen_names: set[str] = set()
    seen_ports: set[tuple[int, str]] = set()
    seen_node_ports: set[tuple[int, str]] = set()
    for i, port in enumerate(spec.ports):
        path = join("spec.ports", i)
        out += _service_port_errors(port, path, need_name)
        if port.name:
            if port.name in seen_names:
                out.append(duplicate(join(path, "name"), port.name))
            seen_names.add(port.name)
        key = (port.port, port.protocol)
        if key in seen_ports:
            out.append(duplicate(path, f"{port.port}/{port.protocol}"))
        seen_ports.add(key)
        if port.node_port and spec.type in ("ClusterIP", "ExternalName"):
            out.append(
                forbidden(join(path, "nodePort"), f"may not be used when `type` is '{spec.type}'")
            )
        if port.node_port:
            node_key = (port.node_port, port.protocol)
            if node_key in seen_node_ports:
                out.append(duplicate(join(path, "nodePort"), port.node_port))
            seen_node_ports.add(node_key)
    return out


def _external_errors(svc: Service) -> list[FieldError]:
    """Traffic policies and the load-balancer fields, as Kubernetes validates them."""
    spec = svc.spec
    out: list[FieldError] = []
    external = spec.type in ("NodePort", "LoadBalancer") or (
        spec.type == "ClusterIP" and bool(spec.external_ips)
    )
    etp = spec.external_traffic_policy
    if etp is not None:
        if etp not in TRAFFIC_POLICIES:
            out.append(not_supported("spec.externalTrafficPolicy", etp, TRAFFIC_POLICIES))
        elif not external:
            out.append(
                invalid(
                    "spec.externalTrafficPolicy",
                    etp,
                    "may only be set for externally-accessible services",
                )
            )
    itp = spec.internal_traffic_policy
    if itp is not None and itp not in TRAFFIC_POLICIES:
        out.append(not_supported("spec.internalTrafficPolicy", itp, TRAFFIC_POLICIES))
    lb = spec.type == "LoadBalancer"
    if spec.load_balancer_ip:
        if not lb:
            out.append(forbidden("spec.loadBalancerIP", LB_ONLY))
        else:
            ip = spec.load_balancer_ip
            out += _first("spec.loadBalancerIP", ip, names.ip_errors(ip))
    if spec.allocate_load_balancer_node_ports is not None and not lb:
        out.append(forbidden("spec.allocateLoadBalancerNodePorts", LB_ONLY))
    if spec.load_balancer_class is not None and not lb:
        out.append(forbidden("spec.loadBalancerClass", LB_ONLY))
    hc = spec.health_check_node_port
    if hc:
        if not (lb and etp == "Local"):
            out.append(
                invalid(
                    "spec.healthCheckNodePort",
                    hc,
                    "may only be set when `type` is 'LoadBalancer' and "
                    "`externalTrafficPolicy` is 'Local'",
                )
            )
        else:
            out += port_errors("spec.healthCheckNodePort", hc)
    return out


def _affinity_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    if spec.session_affinity not in SESSION_AFFINITIES:
        return [not_supported("spec.sessionAffinity", spec.session_affinity, SESSION_AFFINITIES)]
    cfg = spec.session_affinity_config
    if spec.session_affinity == "None":
        if cfg is not None and cfg.client_ip is not None:
            return [
                forbidden(
                    "spec.sessionAffinityConfig", "must not be set when sessionAffinity is None"
                )
            ]
        return []
    timeout = spec.affinity_timeout
    if not 0 < timeout <= MAX_AFFINITY_TIMEOUT:
        return [
            invalid(
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                timeout,
                f"must be greater than 0 and less than or equal to {MAX_AFFINITY_TIMEOUT}",
            )
        ]
    return []


def _cluster_ip_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    ip = spec.cluster_ip
    if not ip:
        return []
    if spec.type == "ExternalName":
        return [forbidden("spec.clusterIP", "may not be set for ExternalName services")]
    if ip == "None":
        if spec.type in ("NodePort", "LoadBalancer"):
            return [
                invalid("spec.clusterIP", ip, f"may not be set to 'None' for {spec.type} services")
            ]
        return []
    return _first("spec.clusterIP", ip, names.ip_errors(ip))


def _ip_family_errors(svc: Service) -> list[FieldError]:
    """``clusterIPs``, ``ipFamilies`` and ``ipFamilyPolicy`` on their own and against
    ``clusterIP``, as Kubernetes validates them; what the cluster can offer (a second
    service network) is the ClusterIP allocator's check."""
    spec = svc.spec
    ips = spec.cluster_ips or []
    families = spec.ip_families or []
    if spec.type == "ExternalName":
        out: list[FieldError] = []
        for field, value in (
            ("clusterIPs", ips),
            ("ipFamilies", families),
            ("ipFamilyPolicy", spec.ip_family_policy),
        ):
            if value:
                out.append(
                    forbidden(join("spec", field), "may not be set for ExternalName services")
                )
        return out
    out = []
    shown = ",".join(ips)
    if spec.cluster_ip:
        if ips and ips[0] != spec.cluster_ip:
            out.append(invalid("spec.clusterIPs", shown, "first value must match `clusterIP`"))
    elif ips:
        out.append(
            invalid("spec.clusterIPs", shown, "must be empty when `clusterIP` is not specified")
        )
    seen: set[str] = set()
    for i, family in enumerate(families):
        path = join("spec.ipFamilies", i)
        if family not in IP_FAMILIES:
            out.append(not_supported(path, family, IP_FAMILIES))
        if family in seen:
            out.append(duplicate(path, family))
        seen.add(family)
    policy = spec.ip_family_policy
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        out.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    bad_ip = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad_ip = True
                out.append(
                    invalid("spec.clusterIPs", shown, "'None' must be the first and only value")
                )
            continue
        reasons = names.ip_errors(ip)
        bad_ip = bad_ip or bool(reasons)
        out += _first(join("spec.clusterIPs", i), ip, reasons)
    if len(ips) > 2:
        out.append(invalid("spec.clusterIPs", shown, "may only hold up to 2 values"))
    if bad_ip:
        return out
    versions = [ipaddress.ip_address(ip).version for ip in ips if ip != "None"]
    if len(ips) > 1 and len(set(versions)) != len(versions):
        out.append(
            invalid("spec.clusterIPs", shown, "may specify no more than one IP for each IP family")
        )
    if not spec.headless:
        for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
            version = ipaddress.ip_address(ip).version
            if (family, version) in ((IPV4, 6), (IPV6, 4)):
                want = family
                out.append(
                    invalid(
                        join("spec.clusterIPs", i),
                        ip,
                        f"expected an {want} value as indicated by `ipFamilies[{i}]`",
                    )
                )
    return out


def service_errors(svc: Service) -> list[FieldError]:
    spec = svc.spec
    out: list[FieldError] = []
    if spec.type not in SERVICE_TYPES:
        out.append(not_supported("spec.type", spec.type, SERVICE_TYPES))
    if spec.type == "ExternalName":
        if not spec.external_name:
            out.append(required("spec.externalName"))
        else:
            name = spec.external_name.removesuffix(".")
            out += _first("spec.externalName", name, names.dns1123_subdomain_errors(name))
    out += _cluster_ip_errors(svc)
    out += _ip_family_errors(svc)
    out += _service_ports_errors(svc)
    if spec.selector:
        out += label_errors(spec.selector, "spec.selector")
    out += _affinity_errors(svc)
    for i, ip in enumerate(spec.external_ips):
        out += _first(join("spec.externalIPs", i), ip, names.ip_errors(ip))
    out += _external_errors(svc)
    return out


# ---------------------------------------------------------------- Endpoints


def _endpoint_address_errors(addr: EndpointAddress, path: str) -> list[FieldError]:
    out = _first(join(path, "ip"), addr.ip, names.ip_errors(addr.ip))
    if addr.hostname:
        out += _first(
            join(path, "hostname"), addr.hostname, names.dns1123_label_errors(addr.hostname)
        )
    if addr.node_name:
        out += _first(
            join(path, "nodeName"), addr.node_name, names.dns1123_subdomain_errors(addr.node_name)
        )
    return out


def _endpoint_port_errors(port: EndpointPort, path: str, need_name: bool) -> list[FieldError]:
    out: list[FieldError] = []
    if not port.name:
        if need_name:
            out.append(required(join(path, "name")))
    else:
        out += _first(join(path, "name"), port.name, names.dns1123_label_errors(port.name))
    out += port_errors(join(path, "port"), port.port)
    out += protocol_errors(join(path, "protocol"), port.protocol)
    return out


def endpoints_errors(ep: Endpoints) -> list[FieldError]:
    out: list[FieldError] = []
    for i, subset in enumerate(ep.subsets):
        path = join("subsets", i)
        if not subset.addresses and not subset.not_ready_addresses:
            out.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, addr in enumerate(subset.addresses):
            out += _endpoint_address_errors(addr, join(path, "addresses", j))
        for j, addr in enumerate(subset.not_ready_addresses):
            out += _endpoint_address_errors(addr, join(path, "notReadyAddresses", j))
        need_name = len(subset.ports) > 1
        seen: set[str] = set()
        for j, port in enumerate(subset.ports):
            ppath = join(path, "ports", j)
            out += _endpoint_port_errors(port, ppath, need_name)
            if port.name:
                if port.name in seen:
                    out.append(duplicate(join(ppath, "name"), port.name))
                seen.add(port.name)
    return out


# ---------------------------------------------------------------- Node


def node_errors(node: Node) -> list[FieldError]:
    out: list[FieldError] = []
    if node.spec.pod_cidr:
        out += _first("spec.podCIDR", node.spec.pod_cidr, names.cidr_errors(node.spec.pod_cidr))
    for i, a in enumerate(node.status.addresses):
        path = join("status.addresses", i)
        if a.type not in NODE_ADDRESS_TYPES:
            out.append(not_supported(join(path, "type"), a.type, NODE_ADDRESS_TYPES))
        if not a.address:
            out.append(required(join(path, "address")))
        elif a.type in ("InternalIP", "ExternalIP"):
            out += _first(join(path, "address"), a.address, names.ip_errors(a.address))
    return out
