import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Req, UseGuards } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import { z } from 'zod';
import type { AuthenticatedRequest, Principal } from '@policygen/service-kit';
import { ROLES, Requires, principalName } from '@policygen/service-kit';
import { ApiTokenNameTakenError } from '@policygen/store';
import { alreadyExists, notFound, validationFailed } from '../http/api-errors';
import { requestIssues } from '../http/issue-paths';
import { API_TOKENS } from '../app/tokens';
import type { ApiTokenRegistry, ApiTokenView } from './api-token-registry';
import { RESERVED_TOKEN_NAMES } from './api-token-registry';

const DAY_MS = 86_400_000;
/** Without an expiry in the request a token lasts this long; `"expiresAt": null` asks for none. */
export const DEFAULT_TOKEN_DAYS = 90;
const MAX_TOKEN_DAYS = 3_660;

const newTokenSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._@:-]*$/,
        'letters, digits and . _ @ : - (starting with a letter or digit)',
      )
      .refine((name) => !RESERVED_TOKEN_NAMES.includes(name), 'is reserved for a token of the environment'),
    role: z.enum(ROLES),
    expiresInDays: z.number().int().min(1).max(MAX_TOKEN_DAYS).optional(),
    expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
  })
  .strict()
  .refine((body) => body.expiresInDays === undefined || body.expiresAt === undefined, {
    message: 'give expiresInDays or expiresAt, not both',
    path: ['expiresAt'],
  });

/** API tokens: listed, created and revoked by admins (`Authorization: Bearer` of an admin's token). */
@Controller('api/v1/api-tokens')
@Requires({ role: 'admin' })
// Like the node and relay token endpoints: credentials are not handed out by the thousand a minute.
@UseGuards(ThrottlerGuard)
export class ApiTokensController {
  constructor(@Inject(API_TOKENS) private readonly tokens: ApiTokenRegistry) {}

  @Get()
  list(): Promise<ApiTokenView[]> {
    return this.tokens.list();
  }

  @Get(':id')
  async one(@Param('id') id: string): Promise<ApiTokenView> {
    const token = await this.tokens.find(id);
    if (!token) throw notFound(`API token ${JSON.stringify(id)}`);
    return token;
  }

  @Post()
  @HttpCode(201)
  async create(
    @Body() body: unknown,
    @Req() request: AuthenticatedRequest,
  ): Promise<ApiTokenView & { token: string }> {
    const parsed = newTokenSchema.safeParse(body);
    if (!parsed.success) throw validationFailed(requestIssues(parsed.error.issues), 'the token request');
    const { name, role, expiresInDays, expiresAt } = parsed.data;
    const expiry =
      expiresAt === null
        ? null
        : expiresAt !== undefined
          ? new Date(expiresAt)
          : new Date(Date.now() + (expiresInDays ?? DEFAULT_TOKEN_DAYS) * DAY_MS);
    if (expiry !== null && expiry.getTime() <= Date.now())
      throw validationFailed(
        [{ path: '$.expiresAt', message: 'must be in the future' }],
        'the token request',
      );
    try {
      return await this.tokens.create({ name, role, expiresAt: expiry }, actorOf(request));
    } catch (error) {
      if (error instanceof ApiTokenNameTakenError) throw alreadyExists(`an API token named "${name}"`);
      throw error;
    }
  }

  @Delete(':id')
  @HttpCode(200)
  async revoke(@Param('id') id: string, @Req() request: AuthenticatedRequest): Promise<ApiTokenView> {
    const token = await this.tokens.revoke(id, actorOf(request));
    if (!token) throw notFound(`API token ${JSON.stringify(id)}`);
    return token;
  }
}

/** Who the request is from: the guard has set it on every route that is not public. */
export function actorOf(request: AuthenticatedRequest): string {
  const principal: Principal | undefined = request.principal;
  return principal ? principalName(principal) : 'anonymous';
}
