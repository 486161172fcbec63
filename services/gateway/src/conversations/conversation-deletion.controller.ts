import { Controller, Delete, HttpCode, Inject, Param } from '@nestjs/common';
import { PermissionDeniedError } from '@keel/core';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId, metadataOf } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { ConversationEraser } from './conversation-eraser.service.js';

/** `DELETE /v1/conversations/{id}` (API.md "Conversation management"). */
@Controller('v1/conversations')
export class ConversationDeletionController {
  constructor(@Inject(ConversationEraser) private readonly eraser: ConversationEraser) {}

  /**
   * → 204: the conversation is gone from every read (404 after, a second DELETE too) and its
   * content erased (its data key destroyed); usage and the audit entry (`ConversationDeleted`:
   * who, when) remain. Another tenant's or an unknown conversation: 404.
   */
  @Delete(':id')
  @HttpCode(204)
  @Roles('editor')
  async delete(
    @Param('id') conversationId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<void> {
    if (caller.kind !== 'tenant')
      throw new PermissionDeniedError('the operator key acts on no tenant; use a tenant key');
    await this.eraser.delete(
      { tenantId: caller.tenantId, keyId: caller.keyId, metadata: metadataOf(caller, requestId) },
      conversationId,
    );
  }
}
