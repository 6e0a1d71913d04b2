/* SPDX-License-Identifier: MIT */
/* proto.h: the NBD protocol's constants, with the names doc/proto.md gives them.
 *
 * Source: doc/proto.md of the NBD project ("Protocol phases", "Option types",
 * "Transmission flags", "Request types", "Structured reply types", "Error values").
 * Pure data: no functions, usable from any thread. All wire values are big-endian;
 * lengths and offsets on the wire are in bytes.
 */
#ifndef DISKGATE_NBD_PROTO_H
#define DISKGATE_NBD_PROTO_H

#include <stdint.h>

/* Handshake magics ("Newstyle negotiation"). */
#define NBD_MAGIC              UINT64_C(0x4e42444d41474943) /* "NBDMAGIC" */
#define NBD_IHAVEOPT           UINT64_C(0x49484156454F5054) /* "IHAVEOPT" */
#define NBD_REP_MAGIC          UINT64_C(0x0003e889045565a9)

/* Handshake flags (server) and client flags. */
#define NBD_FLAG_FIXED_NEWSTYLE   (1u << 0)
#define NBD_FLAG_NO_ZEROES        (1u << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE NBD_FLAG_FIXED_NEWSTYLE
#define NBD_FLAG_C_NO_ZEROES      NBD_FLAG_NO_ZEROES

/* Option types. */
#define NBD_OPT_EXPORT_NAME       1u
#define NBD_OPT_ABORT             2u
#define NBD_OPT_LIST              3u
#define NBD_OPT_PEEK_EXPORT       4u
#define NBD_OPT_STARTTLS          5u
#define NBD_OPT_INFO              6u
#define NBD_OPT_GO                7u
#define NBD_OPT_STRUCTURED_REPLY  8u
#define NBD_OPT_LIST_META_CONTEXT 9u
#define NBD_OPT_SET_META_CONTEXT  10u
#define NBD_OPT_EXTENDED_HEADERS  11u

/* Option reply types. Errors have bit 31 set. */
#define NBD_REP_ACK               1u
#define NBD_REP_SERVER            2u
#define NBD_REP_INFO              3u
#define NBD_REP_META_CONTEXT      4u
#define NBD_REP_FLAG_ERROR        (1u << 31)
#define NBD_REP_ERR_UNSUP         (NBD_REP_FLAG_ERROR | 1u)
#define NBD_REP_ERR_POLICY        (NBD_REP_FLAG_ERROR | 2u)
#define NBD_REP_ERR_INVALID       (NBD_REP_FLAG_ERROR | 3u)
#define NBD_REP_ERR_PLATFORM      (NBD_REP_FLAG_ERROR | 4u)
#define NBD_REP_ERR_TLS_REQD      (NBD_REP_FLAG_ERROR | 5u)
#define NBD_REP_ERR_UNKNOWN       (NBD_REP_FLAG_ERROR | 6u)
#define NBD_REP_ERR_SHUTDOWN      (NBD_REP_FLAG_ERROR | 7u)
#define NBD_REP_ERR_BLOCK_SIZE_REQD (NBD_REP_FLAG_ERROR | 8u)
#define NBD_REP_ERR_TOO_BIG       (NBD_REP_FLAG_ERROR | 9u)
#define NBD_REP_ERR_EXT_HEADER_REQD (NBD_REP_FLAG_ERROR | 10u)

/* Info types (NBD_OPT_INFO / NBD_OPT_GO). */
#define NBD_INFO_EXPORT           0u
#define NBD_INFO_NAME             1u
#define NBD_INFO_DESCRIPTION      2u
#define NBD_INFO_BLOCK_SIZE       3u

/* Transmission flags (16 bits). */
#define NBD_FLAG_HAS_FLAGS           (1u << 0)
#define NBD_FLAG_READ_ONLY           (1u << 1)
#define NBD_FLAG_SEND_FLUSH          (1u << 2)
#define NBD_FLAG_SEND_FUA            (1u << 3)
#define NBD_FLAG_ROTATIONAL          (1u << 4)
#define NBD_FLAG_SEND_TRIM           (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES   (1u << 6)
#define NBD_FLAG_SEND_DF             (1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN      (1u << 8)
#define NBD_FLAG_SEND_RESIZE         (1u << 9)
#define NBD_FLAG_SEND_CACHE          (1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO      (1u << 11)
#define NBD_FLAG_BLOCK_STATUS_PAYLOAD (1u << 12)

/* Transmission magics. */
#define NBD_REQUEST_MAGIC            UINT32_C(0x25609513)
#define NBD_EXTENDED_REQUEST_MAGIC   UINT32_C(0x21e41c71)
#define NBD_SIMPLE_REPLY_MAGIC       UINT32_C(0x67446698)
#define NBD_STRUCTURED_REPLY_MAGIC   UINT32_C(0x668e33ef)
#define NBD_EXTENDED_REPLY_MAGIC     UINT32_C(0x6e8a278c)

/* Command types. */
#define NBD_CMD_READ              0u
#define NBD_CMD_WRITE             1u
#define NBD_CMD_DISC              2u
#define NBD_CMD_FLUSH             3u
#define NBD_CMD_TRIM              4u
#define NBD_CMD_CACHE             5u
#define NBD_CMD_WRITE_ZEROES      6u
#define NBD_CMD_BLOCK_STATUS      7u
#define NBD_CMD_RESIZE            8u

/* Command flags (16 bits). */
#define NBD_CMD_FLAG_FUA          (1u << 0)
#define NBD_CMD_FLAG_NO_HOLE      (1u << 1)
#define NBD_CMD_FLAG_DF           (1u << 2)
#define NBD_CMD_FLAG_REQ_ONE      (1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO    (1u << 4)
#define NBD_CMD_FLAG_PAYLOAD_LEN  (1u << 5)

/* Structured reply chunk flags and types. */
#define NBD_REPLY_FLAG_DONE           (1u << 0)
#define NBD_REPLY_TYPE_NONE           0u
#define NBD_REPLY_TYPE_OFFSET_DATA    1u
#define NBD_REPLY_TYPE_OFFSET_HOLE    2u
#define NBD_REPLY_TYPE_BLOCK_STATUS   5u
#define NBD_REPLY_TYPE_BLOCK_STATUS_EXT 6u
#define NBD_REPLY_TYPE_ERROR          ((1u << 15) | 1u)
#define NBD_REPLY_TYPE_ERROR_OFFSET   ((1u << 15) | 2u)

/* Error values ("Error values"): the only ones a server may send. */
#define NBD_SUCCESS     0u
#define NBD_EPERM       1u
#define NBD_EIO         5u
#define NBD_ENOMEM      12u
#define NBD_EINVAL      22u
#define NBD_ENOSPC      28u
#define NBD_EOVERFLOW   75u
#define NBD_ENOTSUP     95u
#define NBD_ESHUTDOWN   108u

/* base:allocation status flags ("`base:allocation` metadata context"). */
#define NBD_STATE_HOLE  (1u << 0)
#define NBD_STATE_ZERO  (1u << 1)
#define NBD_META_BASE_ALLOCATION "base:allocation"
/* QEMU's docs/interop/nbd.txt, "qemu:allocation-depth": each extent's 32-bit value is the
 * depth in the backing chain where it is allocated (0: nowhere, 1: the image itself, 2: its
 * backing file, ...). */
#define NBD_META_QEMU_ALLOCATION_DEPTH "qemu:allocation-depth"

/* Sizes fixed by the spec (bytes). */
#define NBD_OPTION_HEADER_SIZE   16u  /* IHAVEOPT, option, length */
#define NBD_OPTION_REPLY_SIZE    20u  /* magic, option, type, length */
#define NBD_REQUEST_SIZE         28u
#define NBD_EXTENDED_REQUEST_SIZE 32u /* extension-ext-header */
#define NBD_EXTENDED_REPLY_SIZE  32u
#define NBD_SIMPLE_REPLY_SIZE    16u
#define NBD_STRUCTURED_REPLY_SIZE 20u
#define NBD_MAX_STRING           4096u /* names and messages */
#define NBD_DEFAULT_PORT         10809

/* diskgate's own limits (bytes). */
#define DG_MAX_PAYLOAD           (32u * 1024u * 1024u) /* advertised and enforced */
#define DG_MAX_OPTION_LENGTH     (NBD_MAX_STRING + 1024u) /* longest option we read */

#endif
