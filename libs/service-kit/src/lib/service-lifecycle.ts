import { Injectable } from '@nestjs/common';

/** Where the process is in its life: readiness turns 503 as soon as it starts stopping, so traffic drains. */
@Injectable()
export class ServiceLifecycle {
  stopping = false;
}
