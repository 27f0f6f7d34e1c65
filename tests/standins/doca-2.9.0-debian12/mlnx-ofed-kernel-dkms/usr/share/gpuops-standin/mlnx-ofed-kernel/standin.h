/* gpuops.bringup bench stand-in of one of DOCA-OFED's kernel modules: it loads and does nothing. */
#include <linux/module.h>
#include <linux/init.h>

static int __init standin_init(void) { return 0; }
static void __exit standin_exit(void) { }
module_init(standin_init);
module_exit(standin_exit);
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION("@UPSTREAM@");
MODULE_DESCRIPTION("gpuops bench stand-in of a DOCA-OFED kernel module, OFED @UPSTREAM@");
