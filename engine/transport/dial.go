package transport

import "net/netip"

// literalAddr is addr as an IP and port, when it is one: a literal IP
// (with the port it names) on a TCP network, of the family the network
// allows (tcp4 and tcp6 dial only their own, as DialContext does).
func literalAddr(network, addr string) (netip.AddrPort, bool) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().Zone() != "" {
		return netip.AddrPort{}, false
	}
	if (network == "tcp4" && !ap.Addr().Unmap().Is4()) || (network == "tcp6" && !ap.Addr().Is6()) {
		return netip.AddrPort{}, false
	}
	return ap, true
}
