/* gpuops.bringup bench stand-in of one of NVIDIA's kernel modules: it loads and does nothing. */
#include <linux/module.h>
#include <linux/init.h>
#ifdef GPUOPS_STANDIN_BUILD_FAILS
#include <linux/pci.h>
static int __maybe_unused standin_resize(struct pci_dev *dev)
{
	return pci_resize_resource(dev, 1);
}
#endif

static int __init standin_init(void) { return 0; }
static void __exit standin_exit(void) { }
module_init(standin_init);
module_exit(standin_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION("@UPSTREAM@");
MODULE_DESCRIPTION("gpuops bench stand-in of an NVIDIA kernel module, driver @UPSTREAM@");
