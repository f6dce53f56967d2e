"""Cluster DNS: Services and Endpoints as DNS records, served over UDP and TCP.

``shiftnet.dns.DNSServer(store, config)`` is the library entry point; see
``docs/dns.md`` for the records and the choices made.
"""

from shiftnet.dns.config import DNSConfig
from shiftnet.dns.server import DNSServer
from shiftnet.dns.zone import Zone, ZoneConfig, build_zone

__all__ = ["DNSConfig", "DNSServer", "Zone", "ZoneConfig", "build_zone"]
