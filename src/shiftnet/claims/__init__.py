"""Many clusters on one machine: each ``shiftnet up`` claims its own loopback ranges and ports.

Like kind clusters, several local clusters run side by side. Each one needs a
pod network and a service network on loopback that no other cluster uses
(their processes bind those addresses), and its own router and DNS ports.

* :mod:`shiftnet.claims.picking` (pure): the rules: flags win, a cluster
  keeps what it had, a new cluster takes the lowest free range and port.
* :mod:`shiftnet.claims.registry`: the per-user directory of every cluster's
  claims, changed only under a lock, so two clusters starting at once never
  pick the same range.
* :mod:`shiftnet.claims.probe`: what the kernel says is in use right now
  (bound loopback addresses, busy ports and who holds them).
* :mod:`shiftnet.claims.component`: the ``shiftnet up`` step that ties them
  together before the master, proxy, DNS and router start.
"""
