// SPDX-License-Identifier: MIT
// gpuops bench stand-in of an NVIDIA kernel module (tests/standins/README.md, cuda-repo-rhel9-driver): what
// NVIDIA's RHEL DKMS packages build, by name; it builds with DKMS against the node's kernel headers and does nothing.
// Never loaded: bench nodes are containers, whose kernel is their host's.
#include <linux/init.h>
#include <linux/module.h>
#ifdef GPUOPS_STANDIN_BUILD_FAILS
// The 550.144.03 stand-in does not build, as a driver older than the kernel's API does not (a PCI call whose
// arguments the kernel changed): the role's DKMS failure path on RHEL.
#include <linux/pci.h>
static int __maybe_unused standin_resize(struct pci_dev *dev)
{
	return pci_resize_resource(dev, 1);
}
#endif

static int __init standin_init(void)
{
	return 0;
}

static void __exit standin_exit(void)
{
}

module_init(standin_init);
module_exit(standin_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gpuops bench stand-in of an NVIDIA kernel module");
MODULE_VERSION("@UPSTREAM@");
