/*
 * reject.h — the internal status codes: why a bundle (OC_ERR_WIRE_*) or a
 * control frame (OC_ERR_CTL_TYPE, OC_ERR_CTL_VALUE) was refused.
 *
 * They travel as oc_status_t values inside the tree (the codecs in
 * src/wire and src/ctl return them, the agent counts its rejects by them
 * and labels its metrics with their names) but never come back from a
 * public call: the runtime counts a rejected bundle (bundles_rejected)
 * or turns a broken control exchange into OC_ERR_PEER_FAILED.  So they
 * stay out of the installed <offcore/status.h>; their numbers fill its
 * gaps and never change, and oc_status_string() names them for logs.
 *
 * A switch on an oc_status_t that has these as cases switches on
 * (int)status: they are not enumerators of oc_status_t.
 *
 * Threading: constants only.
 */
#ifndef OC_UTIL_REJECT_H
#define OC_UTIL_REJECT_H

#include <offcore/status.h>

#define OC_ERR_WIRE_TRUNCATED ((oc_status_t)-20) /* shorter than its header */
#define OC_ERR_WIRE_MAGIC     ((oc_status_t)-21) /* not an offcore bundle */
#define OC_ERR_WIRE_VERSION   ((oc_status_t)-22) /* unknown wire version */
#define OC_ERR_WIRE_FLAGS     ((oc_status_t)-23) /* unknown flag bits */
#define OC_ERR_WIRE_LENGTH    ((oc_status_t)-24) /* a length runs past the end, or bytes are left over */
#define OC_ERR_WIRE_COUNT     ((oc_status_t)-25) /* message count disagrees with the content */
#define OC_ERR_WIRE_RANK      ((oc_status_t)-26) /* a rank is out of range or not this destination */
#define OC_ERR_WIRE_JOB       ((oc_status_t)-27) /* bundle belongs to another job */
#define OC_ERR_WIRE_EMPTY     ((oc_status_t)-28) /* a bundle with no message */
#define OC_ERR_WIRE_ITEM_SIZE ((oc_status_t)-29) /* fixed-size bundle with item size 0 or too big */

#define OC_ERR_CTL_TYPE       ((oc_status_t)-40) /* unknown control message type */
#define OC_ERR_CTL_VALUE      ((oc_status_t)-41) /* a control message field is out of range */

#endif /* OC_UTIL_REJECT_H */
